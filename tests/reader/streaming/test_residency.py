"""A bounded cache that pays: each rank keeps a fixed set of shards for good, and every epoch's
order gives those shards to that rank while every sample is still read once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.formats import MANIFEST_NAME, read_manifest
from fastpack.reader.streaming.dataset import StreamingDataset
from fastpack.reader.streaming.plan import Stream, stream_plan
from fastpack.reader.streaming.residency import rank_budget, resident_order, resident_shards
from fastpack.storage import Expected, Location

from tests.publish import publish_dataset
from tests.reader.streaming._streaming_data import build_small, counts, indices, sample_of_image
from tests.s3_server import S3Server

RNG = np.random.default_rng(5)
COUNTS = RNG.integers(3, 9, size=40).astype(np.int64)
SIZES = COUNTS * 1000 + RNG.integers(0, 500, size=40)


@pytest.mark.parametrize("world", [1, 2, 3])
def test_resident_sets_are_disjoint_fit_their_budget_and_follow_the_seed(world: int) -> None:
    span = -(-int(COUNTS.sum()) // world)
    kept = resident_shards(COUNTS, SIZES, seed=1, world=world, budget=40_000, span=span)
    again = resident_shards(COUNTS, SIZES, seed=1, world=world, budget=40_000, span=span)
    other = resident_shards(COUNTS, SIZES, seed=2, world=world, budget=40_000, span=span)
    assert all(np.array_equal(a, b) for a, b in zip(kept, again, strict=True))
    assert any(not np.array_equal(a, b) for a, b in zip(kept, other, strict=True))
    every = np.concatenate(kept)
    assert len(every) == len(set(every.tolist()))
    for shards in kept:
        assert 0 < SIZES[shards].sum() <= 40_000
        assert COUNTS[shards].sum() <= span - COUNTS.max()
    assert all(
        len(k) == 0
        for k in resident_shards(COUNTS, SIZES, seed=1, world=world, budget=0, span=span)
    )


@pytest.mark.parametrize(
    ("world", "workers", "drop_last"), [(1, 1, False), (2, 2, False), (3, 2, True), (4, 3, False)]
)
def test_every_sample_once_per_epoch_and_each_rank_reads_its_resident_shards(
    world: int, workers: int, drop_last: bool
) -> None:
    total = int(COUNTS.sum())
    span = total // world if drop_last else -(-total // world)
    kept = resident_shards(COUNTS, SIZES, seed=3, world=world, budget=30_000, span=span)
    orders = []
    for epoch in range(3):
        order = resident_order(COUNTS, kept, seed=3, epoch=epoch, span=span)
        assert sorted(order.tolist()) == list(range(len(COUNTS)))
        orders.append(order)
        seen = np.zeros(total, np.int64)
        readers = np.zeros((world, len(COUNTS)), np.int64)  # samples of each shard per rank
        for rank in range(world):
            for worker in range(workers):
                plan = stream_plan(
                    COUNTS,
                    Stream(rank, world, worker, workers),
                    seed=3,
                    epoch=epoch,
                    shuffle=True,
                    window=2,
                    drop_last=drop_last,
                    order=order,
                )
                for w in range(len(plan.windows)):
                    np.add.at(seen, plan.window_samples(w), 1)
                for chunk in (c for window in plan.windows for c in window):
                    readers[rank, chunk.shard] += chunk.stop - chunk.start
        wrap = 0 if drop_last else world - 1  # the last rank's span wraps to the start
        for rank in range(world):  # a rank reads all of its resident shards, other ranks none
            assert np.array_equal(readers[rank, kept[rank]], COUNTS[kept[rank]])
            others = np.delete(readers, rank, axis=0)
            assert others[:, kept[rank]].sum() <= wrap
        if drop_last:
            assert seen.max() == 1
            assert seen.sum() == world * span
        else:
            assert seen.min() == 1  # the wrap reads fewer than `world` samples twice
            assert seen.sum() == world * span
    assert not np.array_equal(orders[0], orders[1])  # the shared shards move between epochs


def test_without_shuffle_the_order_is_fixed() -> None:
    kept = resident_shards(
        COUNTS, SIZES, seed=3, world=2, budget=30_000, span=int(COUNTS.sum()) // 2 + 1
    )
    one = resident_order(
        COUNTS, kept, seed=3, epoch=0, span=int(COUNTS.sum()) // 2 + 1, shuffle=False
    )
    two = resident_order(
        COUNTS, kept, seed=3, epoch=1, span=int(COUNTS.sum()) // 2 + 1, shuffle=False
    )
    assert np.array_equal(one, two)


def test_the_budget_leaves_room_for_the_working_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert rank_budget(100_000, world=1, streams=2, working_shards=4, largest=5_000) == 60_000
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # two ranks of the node share its cache
    assert rank_budget(100_000, world=4, streams=2, working_shards=4, largest=5_000) == 10_000


@pytest.fixture
def published(
    make_image_folder: Callable[..., Path], s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> tuple[Path, str]:
    built = build_small(make_image_folder(classes=4, per_class=30, size=40), tmp_path / "ds")
    url = f"s3://{s3_bucket}/ds"
    publish_dataset(built, url, s3_server.storage_options)
    return built, url


def test_a_cache_of_part_of_the_dataset_saves_that_part_every_epoch(
    published: tuple[Path, str],
    s3_server: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built, url = published
    manifest = read_manifest(built / MANIFEST_NAME)
    dataset_bytes = sum(s.bytes for s in manifest.shards)
    largest = max(s.bytes for s in manifest.shards)
    working = (2 + 1) * largest  # one stream: a window of 2 shards and 1 fetched ahead
    limit = working + int(0.4 * dataset_bytes)
    fetched: list[int] = []
    download = Location.download

    def counted(
        self: Location, name: str, dest: Path, expected: Expected, *args: Any, **kwargs: Any
    ) -> None:
        if name.startswith("shards/"):
            fetched.append(expected.size)
        download(self, name, dest, expected, *args, **kwargs)

    monkeypatch.setattr(Location, "download", counted)
    dataset = StreamingDataset(
        url,
        shuffle_window=2,
        prefetch=1,
        cache_limit=limit,
        cache_dir=tmp_path / "cache",
        storage_options=s3_server.storage_options,
    )
    resident = dataset.resident_shards(0)
    assert resident is not None
    kept = sum(manifest.shards[s].bytes for s in resident[0].tolist())
    assert 0.4 * dataset_bytes - largest <= kept <= 0.4 * dataset_bytes
    by_digest = sample_of_image(built)
    per_epoch = []
    for epoch in range(3):
        dataset.set_epoch(epoch)
        fetched.clear()
        seen = [image for image, _ in dataset]
        assert (counts(indices(seen, by_digest), 120) == 1).all()
        per_epoch.append(sum(fetched))
    assert per_epoch[0] == dataset_bytes  # the first epoch fetches every shard once
    for later in per_epoch[1:]:
        assert later <= dataset_bytes - kept + largest
    cached = sum(p.stat().st_size for p in (dataset.root / "shards").glob("*.tar"))
    assert cached <= limit
