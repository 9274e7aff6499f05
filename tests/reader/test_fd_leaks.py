"""Datasets close what they open: shard files and the index map (each map holds a descriptor)
go away on `close()`, on leaving a `with` block, and when the dataset is garbage-collected;
a streaming iteration abandoned half-way closes its shard files."""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.reader import Dataset
from fastpack.reader.streaming.dataset import StreamingDataset

from .conftest import Built

COPIES = 50


def _open_fds(root: Path) -> int:
    """Descriptors of this process open on files under `root` (the dataset): other tests'
    sockets and threads come and go without changing the count."""
    gc.collect()
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:  # closed while listed
            continue
        found += target.startswith(f"{root}/")
    return found


@pytest.fixture
def path(build_dataset: Callable[..., Built]) -> Path:
    """A dataset of several shards, read once so that lazily loaded libraries are loaded."""
    root = build_dataset(classes=4, per_class=8, shard_size=8_000).path
    for io in ("mmap", "pread"):
        Dataset(root, io=io)[0]
        next(iter(StreamingDataset(root, io=io)))
    return root


@pytest.mark.parametrize("io", ["pread", "mmap"])
@pytest.mark.parametrize("how", ["close", "with", "gc"])
def test_datasets_leave_no_descriptors_open(path: Path, io: Any, how: str) -> None:
    before = _open_fds(path)
    kept: list[Dataset] = []
    for _ in range(COPIES):
        ds = Dataset(path, io=io)
        if how == "with":
            with ds:
                ds[0]
                assert ds._state is not None
                assert ds._state.shards.open_count == 1
        else:
            ds[0]
        kept.append(ds)
    del ds
    if how == "close":
        assert _open_fds(path) >= before + 2 * COPIES  # the index map and a shard per dataset
        for ds in kept:
            ds.close()
    if how == "gc":
        refs = [weakref.ref(ds) for ds in kept]
        kept.clear()
        assert [r for r in refs if r() is not None] == []  # the finalizer holds no dataset
    assert _open_fds(path) == before


def test_collected_dataset_in_a_cycle_closes_its_shards(path: Path) -> None:
    before = _open_fds(path)
    for _ in range(COPIES):
        ds = Dataset(path, io="pread")
        ds[0]
        ds.batch_allocator = lambda shape, ds=ds: np.empty(shape, np.uint8)  # a cycle
    del ds
    assert _open_fds(path) == before


def test_a_closed_dataset_reopens_on_its_next_read(path: Path) -> None:
    before = _open_fds(path)
    ds = Dataset(path, io="pread")
    image, label = ds[3]
    labels = ds.labels
    ds.close()
    ds.close()  # twice is fine
    assert ds._state is None
    np.testing.assert_array_equal(ds[3][0], image)  # opens again
    assert ds[3][1] == label
    assert len(list(ds)) == len(ds) == 32
    copy = pickle.loads(pickle.dumps(ds))
    ds.close()
    np.testing.assert_array_equal(copy[3][0], image)
    copy.close()
    assert labels[3] == label  # an array handed out keeps its map until it is freed
    del labels
    assert _open_fds(path) == before


def _read_close_and_report(ds: Dataset, closed: Any) -> None:
    """In a forked child: read, close, and report how many descriptors the close freed."""
    ds[2]  # the shard the parent opened
    before = _open_fds(ds.path)
    ds.close()
    closed.value = before - _open_fds(ds.path)


def test_a_forked_child_closing_its_copy_leaves_the_parent_reading(path: Path) -> None:
    ds = Dataset(path, io="pread")
    image = ds[2][0]
    fork = multiprocessing.get_context("fork")
    closed = fork.Value("i", -1)
    child = fork.Process(target=_read_close_and_report, args=(ds, closed))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert closed.value == 2  # the child's copies of the shard descriptor and the index map
    np.testing.assert_array_equal(ds[2][0], image)  # the parent's descriptors are its own
    assert ds._state is not None
    assert ds._state.shards.open_count == 1


@pytest.mark.parametrize("how", ["close", "with", "gc"])
def test_streaming_datasets_leave_no_descriptors_open(path: Path, how: str) -> None:
    before = _open_fds(path)
    kept: list[StreamingDataset] = []
    for _ in range(COPIES):
        ds = StreamingDataset(path, io="pread", shuffle_window=2)
        if how == "with":
            with ds:
                next(iter(ds))  # an iteration abandoned at once
        else:
            next(iter(ds))
        kept.append(ds)
    del ds
    if how == "close":
        assert _open_fds(path) == before + COPIES  # the index maps; the iterations closed theirs
        for ds in kept:
            ds.close()
    if how == "gc":
        kept.clear()
    assert _open_fds(path) == before
    if kept:
        assert len(list(kept[0])) == len(kept[0]) == 32  # a closed dataset opens again
        kept[0].close()
        assert _open_fds(path) == before


@pytest.mark.parametrize("io", ["pread", "mmap"])
@pytest.mark.parametrize("how", ["close", "del"])
def test_an_abandoned_iteration_closes_its_shard_files(path: Path, io: Any, how: str) -> None:
    before = _open_fds(path)
    ds = StreamingDataset(path, io=io, shuffle_window=2)
    ds._opened()
    with_index = _open_fds(path)
    iterations: list[Iterator[Any]] = [iter(ds) for _ in range(COPIES)]
    for k, it in enumerate(iterations):
        for _ in range(1 + k % 5):
            next(it)
    assert _open_fds(path) >= with_index + COPIES  # each in its first window, of one shard
    if how == "close":
        for it in iterations:
            it.close()  # type: ignore[attr-defined]
        assert _open_fds(path) == with_index
    del it
    iterations.clear()
    assert _open_fds(path) == with_index
    ds.close()
    assert _open_fds(path) == before
