"""One epoch's stream alone: `Shards` opens a stream's shards from a `Site` within a
`CacheBudget`, and `read_epoch` reads its parts into samples or batches, counted by a `Cursor`,
with the per-process files and decoder of `Opened`; no `StreamingDataset` involved."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import Index
from fastpack.reader import CenterCrop, Dataset
from fastpack.reader.shard_files import ShardFile
from fastpack.reader.streaming.budget import CacheBudget
from fastpack.reader.streaming.epoch_stream import Reading, Shards, read_epoch
from fastpack.reader.streaming.opened import Opened
from fastpack.reader.streaming.options import StreamingOptions
from fastpack.reader.streaming.origins import MountOrigin
from fastpack.reader.streaming.plan import Chunk, Part, Stream, StreamPlan
from fastpack.reader.streaming.planner import EpochPlans
from fastpack.reader.streaming.reading import Columns
from fastpack.reader.streaming.resume import Cursor
from fastpack.reader.streaming.site import Cached, Site, locate
from fastpack.reader.streaming.sources import LocalShards, RemoteShards, ShardSource

from tests.reader.conftest import Built

STREAM = Stream(0, 1, 0, 1)


@pytest.fixture
def built(build_dataset: Callable[..., Built]) -> Path:
    return build_dataset(classes=3, per_class=6, size=24, shard_size=4_000).path


class Recorded:
    """A stream's shard source, with what the reading asked of it."""

    def __init__(self, source: ShardSource) -> None:
        self.source = source
        self.released: list[int] = []
        self.closed = False

    def get(self, position: int) -> ShardFile:
        return self.source.get(position)

    def release(self, position: int) -> None:
        self.released.append(position)
        self.source.release(position)

    def close(self) -> None:
        self.closed = True
        self.source.close()


def no_index() -> Index:
    raise AssertionError("a cached site looks nothing up in the index")


def reading_of(site: Site, options: StreamingOptions) -> tuple[StreamPlan, Opened, Columns]:
    plan = EpochPlans(site.manifest, None).plan(STREAM, options, budget=None, epoch=1)
    columns = Columns.of(site.path, site.manifest.schema, options)
    return plan, Opened(site.path, site.root, columns, site.manifest), columns


def open_parts(
    site: Site, options: StreamingOptions, parts: Sequence[Part], opened: Opened
) -> Recorded:
    budget = CacheBudget.of(options, site.manifest, cached=site.cached is not None)
    chunks = [c for part in parts for c in part.chunks]
    return Recorded(Shards(site, budget, options.fetch).open(chunks, lambda: opened.files().index))


def test_an_epoch_s_samples_in_the_plan_s_order(built: Path) -> None:
    options = StreamingOptions(shuffle_window=2, seed=3)
    site = locate(built, options)
    plan, opened, columns = reading_of(site, options)
    parts = plan.parts(0, plan.num_samples)
    shards = open_parts(site, options, parts, opened)
    assert isinstance(shards.source, LocalShards)
    cursor = Cursor(STREAM, 0, None)
    reader = opened.reader(options, None)
    stream = read_epoch(parts, shards, reader, Reading.of(options, columns, 1), cursor)
    labels = []
    for k, (image, label) in enumerate(stream):
        assert cursor.position == k + 1  # counted before it is handed out
        assert image.ndim == 3
        labels.append(int(label))
    order = np.concatenate([plan.window_samples(w) for w in range(len(plan.windows))])
    assert labels == Dataset(built).labels[order].tolist()
    assert sorted(shards.released) == list(range(len(shards.released)))  # each shard once
    assert len(shards.released) == sum(len(w) for w in plan.windows)
    assert shards.closed


def test_batches_across_windows_and_a_stream_closed_early(built: Path) -> None:
    options = StreamingOptions(shuffle_window=2, batch_size=4, transform=CenterCrop(16))
    site = locate(built, options)
    plan, opened, columns = reading_of(site, options)
    parts = plan.parts(2, plan.num_samples)  # a stream resumed after two samples
    reading = Reading.of(options, columns, 1)
    assert (reading.batch_size, reading.draws, reading.image) == (4, 0, "jpg")
    cursor = Cursor(STREAM, 2, None)
    shards = open_parts(site, options, parts, opened)
    batches = list(read_epoch(parts, shards, opened.reader(options, None), reading, cursor))
    assert [len(labels) for _, labels in batches] == [4, 4, 4, 4]  # 16 of 18 samples
    assert batches[0][0].shape == (4, 16, 16, 3)
    assert cursor.position == 18
    shards = open_parts(site, options, parts, opened)
    early = read_epoch(
        parts, shards, opened.reader(options, None), reading, Cursor(STREAM, 2, None)
    )
    next(early)
    early.close()  # a stream dropped half-way closes its shards
    assert shards.closed


def test_a_mount_read_in_place_reads_ahead(built: Path) -> None:
    options = StreamingOptions(shuffle_window=2)
    site = dataclasses.replace(locate(built, options), mount=True, io="pread")
    plan, opened, _ = reading_of(site, options)
    shards = open_parts(site, options, plan.parts(0, plan.num_samples), opened)
    assert isinstance(shards.source, LocalShards)
    assert shards.source._readahead is not None
    assert shards.source._readahead.depth == 4  # two windows
    shards.close()


def test_a_cached_site_fetches_shards_into_its_cache(built: Path, tmp_path: Path) -> None:
    options = StreamingOptions(shuffle_window=2)
    cache = tmp_path / "cache"
    local = locate(built, options)
    site = dataclasses.replace(local, cached=Cached(origin=MountOrigin(built), root=cache))
    plan, opened, columns = reading_of(site, options)
    parts = plan.parts(0, plan.num_samples)
    shards = open_parts(site, options, parts, opened)
    assert isinstance(shards.source, RemoteShards)
    reader = opened.reader(options, None)
    got = list(
        read_epoch(parts, shards, reader, Reading.of(options, columns, 1), Cursor(STREAM, 0, None))
    )
    assert len(got) == 18
    copies = {p.relative_to(cache).as_posix() for p in cache.glob("shards/*")}
    assert copies == {s.name for s in site.manifest.shards}


def test_resident_shards_are_kept_out_of_eviction(built: Path, tmp_path: Path) -> None:
    options = StreamingOptions(shuffle_window=1)
    local = locate(built, options)
    site = dataclasses.replace(local, cached=Cached(origin=MountOrigin(built), root=tmp_path))
    resident = [np.array([0, 2], dtype=np.int64)]
    budget = CacheBudget.of(options, site.manifest, cached=True)
    shards = Shards(site, budget, options.fetch, resident=resident)
    source = shards.open([Chunk(1, 0, 1)], no_index)
    assert isinstance(source, RemoteShards)
    names = [site.manifest.shards[s].name for s in (0, 2)]
    assert source._needed() == names  # nothing requested yet: only the resident shards
    source.close()


def test_a_process_opens_its_files_once(built: Path) -> None:
    options = StreamingOptions()
    site = locate(built, options)
    _, opened, _ = reading_of(site, options)
    files = opened.files()
    assert opened.files() is files
    assert opened.reader(options, None).files is files
    copy = pickle.loads(pickle.dumps(opened))
    assert copy._files is None  # a copy opens its own
    assert copy.files() is not files
    opened.close()
    assert opened.files() is not files
