"""StreamingDataset over local datasets: the split over ranks and workers, the window shuffle,
determinism, resume, pread; and the plan's rules as properties."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fastpack.formats import CorruptIndexError
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop
from fastpack.reader.map_style import ShardReader
from fastpack.reader.streaming.cache import ShardCache
from fastpack.reader.streaming.dataset import StreamingDataset
from fastpack.reader.streaming.plan import Stream, stream_plan
from fastpack.storage.retry import RetryPolicy
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader

from tests.reader.conftest import section
from tests.reader.streaming._streaming_data import (
    build_small,
    counts,
    digest,
    indices,
    sample_of_image,
)


@pytest.fixture
def built(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """120 samples in shards of a few samples each."""
    return build_small(make_image_folder(classes=4, per_class=30, size=40), tmp_path / "ds")


def _read(dataset: StreamingDataset) -> list[Any]:
    return [image for image, _ in dataset]


def test_two_ranks_two_workers_read_every_sample_once(built: Path) -> None:
    by_digest = sample_of_image(built)
    seen: list[int] = []
    for rank in range(2):
        dataset = StreamingDataset(built, rank=rank, world_size=2, seed=5, shuffle_window=2)
        loader = DataLoader(dataset, batch_size=None, num_workers=2)
        rank_ids = indices((image.numpy() for image, _ in loader), by_digest)
        assert len(rank_ids) == len(dataset) == 60
        seen += rank_ids
    assert (counts(seen, 120) == 1).all()


def test_labels_match_the_index(built: Path) -> None:
    by_digest = sample_of_image(built)
    labels = Dataset(built).labels
    for image, label in StreamingDataset(built, seed=1):
        assert label.dtype == np.int64
        assert label == labels[by_digest[digest(image)]]


def test_order_is_deterministic_per_seed_and_epoch(built: Path) -> None:
    by_digest = sample_of_image(built)
    first = indices(_read(StreamingDataset(built, seed=3)), by_digest)
    again = indices(_read(StreamingDataset(built, seed=3)), by_digest)
    other = StreamingDataset(built, seed=3)
    other.set_epoch(1)
    assert first == again
    assert sorted(first) == list(range(120))
    assert indices(_read(other), by_digest) != first


def test_window_shuffle_mixes_several_shards(built: Path) -> None:
    by_digest = sample_of_image(built)
    shard_of = Dataset(built)._opened().index.shard
    dataset = StreamingDataset(built, seed=0, shuffle_window=3)
    per_shard = max(s.samples for s in dataset.manifest.shards)
    first, second = dataset.plan().windows[:2]
    assert (len(first), len(second)) == (1, 3)  # the first window is one shard, the next three
    start = first[0].stop - first[0].start
    head = indices(_read(dataset)[start : start + per_shard], by_digest)
    assert len({int(shard_of[i]) for i in head}) >= 2


def test_without_shuffle_samples_come_in_dataset_order(built: Path) -> None:
    by_digest = sample_of_image(built)
    dataset = StreamingDataset(built, shuffle=False)
    assert indices(_read(dataset), by_digest) == list(range(120))


def test_resume_mid_epoch_continues_the_same_sequence(built: Path) -> None:
    by_digest = sample_of_image(built)
    full = StreamingDataset(built, seed=9, shuffle_window=2)
    full.set_epoch(2)
    expected = indices(_read(full), by_digest)
    first = StreamingDataset(built, seed=9, shuffle_window=2)
    first.set_epoch(2)
    iterator = iter(first)
    head = [next(iterator)[0] for _ in range(37)]
    state = first.state_dict()
    assert state["position"] == 37
    assert state["epoch"] == 2
    resumed = StreamingDataset(built, seed=9, shuffle_window=2)
    resumed.load_state_dict(state)
    assert indices(head + _read(resumed), by_digest) == expected


def test_resume_in_dataloader_workers(built: Path) -> None:
    """What StatefulDataLoader does per worker: state_dict() in the worker after each batch,
    load_state_dict() in the fresh worker before iterating."""
    dataset = StreamingDataset(built, seed=4, transform=CenterCrop(24), shuffle_window=2)
    reference = [label for _, label in dataset]
    iterator = iter(dataset)
    [next(iterator) for _ in range(50)]
    state = dataset.state_dict()
    resumed = StreamingDataset(built, seed=4, transform=CenterCrop(24), shuffle_window=2)
    resumed.load_state_dict(state)
    rest = [label for _, labels in DataLoader(resumed, batch_size=10) for label in labels]
    assert [int(v) for v in rest] == [int(v) for v in reference[50:]]


def test_resume_with_another_worker_count_is_refused(built: Path) -> None:
    dataset = StreamingDataset(built)
    state = dataset.state_dict()
    state["stream"] = [0, 1, 1, 2]
    dataset.load_state_dict(state)
    with pytest.raises(ValueError, match=r"worker 1/2.*same world size and worker count"):
        next(iter(dataset))


def test_bad_state_is_refused(built: Path) -> None:
    dataset = StreamingDataset(built)
    with pytest.raises(ValueError, match="not a StreamingDataset state"):
        dataset.load_state_dict({"epoch": 0})
    with pytest.raises(ValueError, match="saved with seed 7"):
        dataset.load_state_dict({**dataset.state_dict(), "seed": 7})


@pytest.mark.parametrize(("drop_last", "per_rank"), [(False, 18), (True, 17)])
def test_every_rank_yields_the_same_number_of_samples(
    built: Path, drop_last: bool, per_rank: int
) -> None:
    by_digest = sample_of_image(built)
    seen: list[int] = []
    for rank in range(7):
        dataset = StreamingDataset(built, rank=rank, world_size=7, drop_last=drop_last)
        ids = indices(_read(dataset), by_digest)
        assert len(ids) == len(dataset) == per_rank
        seen += ids
    seen_counts = counts(seen, 120)
    if drop_last:  # 120 = 7 * 17 + 1: one sample left out
        assert seen_counts.max() == 1
        assert (seen_counts == 0).sum() == 1
    else:  # 7 * 18 = 126: six samples read twice
        assert seen_counts.min() == 1
        assert (seen_counts == 2).sum() == 6


def test_pread_reads_what_mmap_reads(built: Path) -> None:
    mapped = _read(StreamingDataset(built, seed=2))
    pread = _read(StreamingDataset(built, seed=2, io="pread"))
    assert all(np.array_equal(a, b) for a, b in zip(mapped, pread, strict=True))
    files = Dataset(built)._opened().files
    index = files.index
    a, b = ShardReader(files, "mmap"), ShardReader(files, "pread")
    for i in (0, 57, 119):
        shard, offset, size = index.locate(i, "jpg", b.size(int(index.shard[i])))
        assert bytes(a.read(shard, offset, size)) == b.read(shard, offset, size)
    b.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shuffle_window": 0}, "shuffle_window=0: expected >= 1"),
        ({"io": "aio"}, r"io must be one of \('auto', 'mmap', 'pread'\), got 'aio'"),
        ({"rank": 2, "world_size": 2}, r"rank must be in \[0, 2\), got 2"),
        ({"seed": -1}, "seed=-1"),
    ],
)
def test_bad_options_are_refused(built: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StreamingDataset(built, **options)


def test_rank_and_world_size_come_from_the_environment(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    dataset = StreamingDataset(built)
    assert (dataset.rank, dataset.world_size, len(dataset)) == (1, 3, 40)


def test_is_an_iterable_dataset_for_torch(built: Path) -> None:
    assert isinstance(StreamingDataset(built), torch.utils.data.IterableDataset)


@settings(max_examples=150, deadline=None)
@given(
    shard_counts=st.lists(st.integers(0, 12), min_size=1, max_size=10),
    streams=st.tuples(st.integers(1, 5), st.integers(1, 3)),
    window=st.integers(1, 4),
    drop_last=st.booleans(),
    epoch=st.integers(0, 3),
)
def test_plan_covers_the_epoch(
    shard_counts: list[int], streams: tuple[int, int], window: int, drop_last: bool, epoch: int
) -> None:
    world, workers = streams
    shard_sizes = np.array(shard_counts, dtype=np.int64)
    total = int(shard_sizes.sum())
    ranks: list[int] = []
    seen: list[int] = []
    for rank in range(world):
        n = 0
        for worker in range(workers):
            plan = stream_plan(
                shard_sizes,
                Stream(rank, world, worker, workers),
                seed=1,
                epoch=epoch,
                shuffle=True,
                window=window,
                drop_last=drop_last,
            )
            ids = [int(i) for w in range(len(plan.windows)) for i in plan.window_samples(w)]
            assert len(ids) == plan.num_samples
            assert all(len(w) <= window for w in plan.windows)
            n += len(ids)
            seen += ids
        ranks.append(n)
    assert len(set(ranks)) == 1
    seen_counts = counts(seen, total)
    if total % world == 0:
        assert (seen_counts == 1).all()
    elif drop_last:
        assert seen_counts.max(initial=0) <= 1
        assert (seen_counts == 0).sum() == total % world
    else:
        assert seen_counts.min() >= 1
        assert seen_counts.sum() == ranks[0] * world


def _put(cache: ShardCache, name: str, size: int, age: float) -> None:
    path = cache.path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(size))
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))


def test_cache_evicts_least_recently_used_shards_not_kept(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path, limit_bytes=3000)
    _put(cache, "shards/000000.tar", 1000, age=30)
    _put(cache, "shards/000001.tar", 1000, age=20)
    _put(cache, "shards/000002.tar", 1000, age=10)
    assert cache.lookup("shards/000000.tar", 1000) is not None  # now the most recent
    tmp = cache.reserve("shards/000003.tar", 1500, keep=["shards/000002.tar"])
    assert tmp.stat().st_size == 1500  # a download counts at its full size from the start
    assert not cache.path("shards/000001.tar").exists()
    assert cache.path("shards/000002.tar").exists()  # kept, though older than 000000
    assert not cache.path("shards/000000.tar").exists()
    assert cache.usage() == 2500
    assert cache.lookup("shards/000002.tar", 999) is None  # wrong size: not a hit


def test_a_download_renamed_while_the_cache_is_listed_still_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another stream's download can finish (rename) between the directory listing and the
    stat; the shard must count once under its final name, or the cache overfills."""
    cache = ShardCache(tmp_path, limit_bytes=3000)
    _put(cache, "shards/000000.tar", 1000, age=30)
    part = cache.path("shards/.000001.tar.1.2.part")
    part.write_bytes(bytes(1500))
    listing = os.scandir

    def rename_after_listing(path: Any) -> Any:
        if Path(path) != part.parent or not part.exists():
            return listing(path)
        items = list(listing(path))
        part.rename(cache.path("shards/000001.tar"))
        return items

    monkeypatch.setattr(os, "scandir", rename_after_listing)
    cache.reserve("shards/000002.tar", 1000, keep=["shards/000001.tar"])
    monkeypatch.undo()
    assert not part.exists()
    assert not cache.path("shards/000000.tar").exists()  # 1000 + 1500 + 1000 > 3000: evicted
    assert cache.usage() == 2500


def test_cache_removes_downloads_of_dead_processes(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path, limit_bytes=None)
    mine = cache.reserve("shards/000000.tar", 10, keep=[])
    dead = tmp_path / "shards" / ".000001.tar.999999999.1.part"
    dead.write_bytes(b"x")
    cache.remove_stale_downloads()
    assert mine.exists()
    assert not dead.exists()


def test_bad_cache_and_retry_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cache limit must be >= 0 bytes, got -1"):
        ShardCache(tmp_path, limit_bytes=-1)
    with pytest.raises(ValueError, match="attempts must be >= 1"):
        RetryPolicy(attempts=0)


def test_random_crops_match_the_map_style_reader(built: Path) -> None:
    """Both readers crop sample i of epoch e with the same draws, whatever the reading order."""
    streaming = StreamingDataset(built, seed=7, transform=RandomResizedCrop(16), shuffle_window=2)
    streaming.set_epoch(1)
    mapped = Dataset(built, seed=7, transform=RandomResizedCrop(16))
    mapped.set_epoch(1)
    plan = streaming.plan()
    order = np.concatenate([plan.window_samples(w) for w in range(len(plan.windows))])
    images = [image for image, _ in streaming]
    assert len(images) == len(order) == 120
    for i, image in zip(order.tolist(), images, strict=True):
        np.testing.assert_array_equal(image, mapped[i][0])


def test_an_index_whose_shard_column_disagrees_with_the_manifest_is_named(built: Path) -> None:
    shard = section(built, "shard")
    last = int(shard[-1])
    shard[0] = last  # sample 0 now claims the last shard; the manifest's counts say shard 0
    shard.flush()
    del shard
    dataset = StreamingDataset(built, shuffle=False, shuffle_window=1)
    with pytest.raises(CorruptIndexError, match=rf"sample 0 is in shard {last}, the manifest"):
        list(dataset)
