"""loader.stats() through real loaders: exact counts, the trainer's wait, the workers' times and
bytes, the verdict on a slow trainer and on a slow decode; streaming from a path and from S3;
DALI on the CPU."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastpack.formats import read_manifest
from fastpack.reader import (
    CenterCrop,
    Dataset,
    FetchOptions,
    Mix,
    RetryPolicy,
    StreamingDataset,
    make_dali_loader,
    make_loader,
)
from fastpack.reader.shard_files import IoChoice
from fastpack.reader.stats import LoaderStats
from fastpack.reader.stats.verdict import TRAINER_WAIT_OK

from tests.publish import publish_dataset
from tests.s3_server import S3Server

from ..conftest import Built

TIMEOUT = 60  # seconds a worker may take per batch; a hung worker fails the test


class SlowCrop:
    """CenterCrop that sleeps `seconds` per image first: decoding that cannot keep up."""

    def __init__(self, size: int, seconds: float) -> None:
        self.crop, self.seconds = CenterCrop(size), seconds

    @property
    def output_shape(self) -> tuple[int, int]:
        return self.crop.output_shape

    @property
    def draws(self) -> int:
        return self.crop.draws

    def __call__(self, data: Any, draws: Sequence[float] | None = None, out: Any = None) -> Any:
        time.sleep(self.seconds)
        return self.crop(data, draws, out)


def _image_bytes(ds: Dataset) -> int:
    return sum(len(ds.read_bytes(i)) for i in range(len(ds)))


def _check_epoch(stats: LoaderStats, batches: int, samples: int, payload: int) -> None:
    assert (stats.batches, stats.samples) == (batches, samples)
    assert sum(w.batches for w in stats.workers) == batches
    assert sum(w.samples for w in stats.workers) == samples
    assert 0 <= stats.wait_share <= 1
    assert 0 < stats.wait_seconds <= stats.seconds
    assert stats.images_per_second == pytest.approx(samples / stats.seconds)
    assert all(w.decode_seconds > 0 for w in stats.workers if w.batches)
    assert stats.bytes_read == payload  # every image's member, read once
    assert (stats.bytes_fetched, stats.cache_hits, stats.retries) == (0, 0, 0)
    assert stats.verdict


@pytest.mark.parametrize(("workers", "io"), [(0, "mmap"), (2, "mmap"), (2, "pread")])
def test_counts_per_epoch_and_per_call(
    build_dataset: Callable[..., Built], workers: int, io: IoChoice
) -> None:
    ds = Dataset(build_dataset(classes=3, per_class=7).path, transform=CenterCrop(16), io=io)
    loader = make_loader(  # workers that stop with each epoch: persistent ones would decode
        ds,  # the next epoch's first batches in this one's interval
        batch_size=4,
        num_workers=workers,
        persistent_workers=False,
        timeout=TIMEOUT if workers else 0,
    )
    assert loader.stats().batches == 0  # nothing asked for yet
    payload = _image_bytes(ds)
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        for _ in loader:
            pass
        stats = loader.stats()  # the second call counts the second epoch only
        _check_epoch(stats, len(loader), len(ds), payload)
        assert len(stats.workers) == max(workers, 1)
        assert stats.in_process == (workers == 0)
        if io == "pread":
            assert all(w.read_seconds > 0 for w in stats.workers)
    again = loader.stats()
    assert (again.batches, again.samples, again.bytes_read) == (0, 0, 0)
    assert again.verdict == "no batch was taken in this interval"


def test_a_mix_batch_is_one_batch(build_dataset: Callable[..., Built]) -> None:
    one = Dataset(build_dataset(name="one").path, transform=CenterCrop(16))
    two = Dataset(build_dataset(name="two", seed=1).path, transform=CenterCrop(16))
    loader = make_loader(  # a worker that stops with the epoch: no batch of the next one
        Mix([(one, 1), (two, 1)], epoch_size=20),
        batch_size=4,
        num_workers=1,
        persistent_workers=False,
        timeout=TIMEOUT,
    )
    for _ in loader:
        pass
    stats = loader.stats()
    assert stats.batches == stats.workers[0].batches == 5  # each made of both sources' parts
    assert stats.samples == stats.workers[0].samples == 20


def test_stats_format_and_dict(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset().path, transform=CenterCrop(16))
    loader = make_loader(  # a worker that stops with the epoch: no batch of the next one
        ds, batch_size=4, num_workers=1, persistent_workers=False, timeout=TIMEOUT
    )
    for _ in loader:
        pass
    stats = loader.stats()
    lines = stats.format().splitlines()
    assert lines[0].startswith(f"loader: 3 batches, 12 samples in {stats.seconds:.1f} s")
    assert lines[1].startswith("1 worker: decoding ")
    read = f"{(stats.bytes_read or 0) / 1024:,.1f} KiB"
    assert lines[1].endswith(f"3 batches made, read {read}, fetched 0 B, 0 cache hits, 0 retries")
    assert lines[2] == f"verdict: {stats.verdict}"
    values = stats.to_dict()
    assert values["batches"] == 3
    assert values["workers"][0]["samples"] == 12


def test_a_slow_trainer_is_the_bottleneck(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset(classes=2, per_class=8).path, transform=CenterCrop(16))
    loader = make_loader(ds, batch_size=2, num_workers=2, timeout=TIMEOUT)
    batches = iter(loader)
    next(batches), next(batches)  # one from each worker: both have started
    time.sleep(0.3)  # and filled their prefetch
    loader.stats()
    for _ in batches:
        time.sleep(0.1)  # a training step that takes far longer than a batch's decode
    stats = loader.stats()
    assert stats.batches == len(loader) - 2
    assert stats.wait_share <= TRAINER_WAIT_OK
    assert "data loading is not your bottleneck; the training step is" in stats.verdict


@pytest.mark.parametrize("workers", [0, 2])
def test_a_slow_decode_is_the_bottleneck(build_dataset: Callable[..., Built], workers: int) -> None:
    ds = Dataset(build_dataset(classes=2, per_class=12).path, transform=SlowCrop(16, 0.03))
    loader = make_loader(ds, batch_size=2, num_workers=workers, timeout=TIMEOUT if workers else 0)
    batches = iter(loader)
    next(batches)
    loader.stats()
    for _ in batches:
        pass
    stats = loader.stats()
    assert stats.wait_share > 0.5
    assert stats.verdict.startswith(f"the trainer waits on data {stats.wait_share:.0%} of the time")
    if workers:
        assert "decode-bound (workers spend " in stats.verdict
        assert "add workers" in stats.verdict or "every core decodes already" in stats.verdict
    else:
        assert "it loads its own batches (num_workers=0" in stats.verdict


def test_batches_held_by_the_trainer_go_outside_the_slots(
    build_dataset: Callable[..., Built],
) -> None:
    ds = Dataset(build_dataset(classes=2, per_class=10).path, transform=CenterCrop(16))
    loader = make_loader(ds, batch_size=2, num_workers=1, prefetch_factor=1, timeout=TIMEOUT)
    held = list(loader)  # every batch kept: the worker's 2 slots stay taken
    stats = loader.stats()
    assert len(held) == stats.batches == 10
    assert stats.workers[0].fresh_blocks >= 10 - 2
    assert "outside the slots" in stats.format()


def test_streaming_from_a_path_fetches_nothing(build_dataset: Callable[..., Built]) -> None:
    path = build_dataset(classes=3, per_class=8, shard_size=6_000).path
    payload = _image_bytes(Dataset(path))
    ds = StreamingDataset(path, transform=CenterCrop(16), shuffle_window=2)
    loader = make_loader(  # workers that stop with the epoch: no batch of the next one
        ds, batch_size=4, num_workers=2, persistent_workers=False, timeout=TIMEOUT
    )
    for _ in loader:
        pass
    stats = loader.stats()
    _check_epoch(stats, len(loader), len(ds), payload)


def test_streaming_from_s3_counts_fetches_then_cache_hits(
    build_dataset: Callable[..., Built], s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    path = build_dataset(classes=3, per_class=8, shard_size=6_000).path
    url = f"s3://{s3_bucket}/ds"
    publish_dataset(path, url, s3_server.storage_options)
    shards = read_manifest(path / "fastpack.json").shards
    ds = StreamingDataset(
        url,
        transform=CenterCrop(16),
        cache_dir=tmp_path / "cache",
        shuffle_window=2,
        storage_options=s3_server.storage_options,
        fetch=FetchOptions(retry=RetryPolicy(attempts=2, backoff_s=0.05)),
    )
    loader = make_loader(  # workers that stop with each epoch: persistent ones would open
        ds,  # the next epoch's first shards (cache hits) in this one's interval
        batch_size=4,
        num_workers=2,
        persistent_workers=False,
        timeout=TIMEOUT,
    )
    epochs = []
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        for _ in loader:
            pass
        epochs.append(loader.stats())
    first, second = epochs
    assert first.batches == second.batches == len(loader)
    assert first.bytes_fetched is not None
    assert first.bytes_fetched >= sum(s.bytes for s in shards)  # the shards and index rows
    assert second.bytes_fetched == 0  # everything is in the cache now
    assert second.cache_hits is not None
    assert second.cache_hits >= len(shards)  # a shard split between the workers: both look
    assert first.retries == second.retries == 0


@pytest.mark.parametrize("fed", [True, False])
def test_dali_counts_the_trainers_side(build_dataset: Callable[..., Built], fed: bool) -> None:
    """`make_loader(loader="dali")` (fastpack's order fed to DALI) and DALI's own reader."""
    path = build_dataset(classes=3, per_class=4, size=96).path
    if fed:
        ds = Dataset(path, transform=CenterCrop(32))
        loader = make_loader(ds, batch_size=4, num_workers=1, loader="dali")
    else:
        loader = make_dali_loader(path, batch_size=4, transform=CenterCrop(32), num_workers=1)
    for _ in loader:
        pass
    stats = loader.stats()
    assert (stats.batches, stats.samples) == (len(loader), 12)
    assert 0 <= stats.wait_share <= 1
    assert stats.workers == ()
    assert stats.bytes_read is stats.bytes_fetched is stats.cache_hits is stats.retries is None
    assert len(stats.format().splitlines()) == 2
