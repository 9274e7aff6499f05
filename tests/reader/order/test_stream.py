"""Persistent workers start the next epoch while this one drains: every epoch still yields the
batches it yields without them, in the same order, whatever the trainer does between epochs
(the next epoch, a jump with `set_epoch`, the same epoch again, a resume, an epoch cut short)."""

from __future__ import annotations

import ctypes
import multiprocessing
import pickle
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pytest
from fastpack.reader import Dataset, EpochBatchSampler, Mix, RandomResizedCrop, make_loader
from fastpack.reader.order import EpochBatch
from fastpack.reader.order.stream import SkipStale, StreamBatch

from ..conftest import Built

TIMEOUT = 60  # seconds a worker may take per batch; a hung worker fails the test
BATCH = 6
SEED = 3

Batches = list[tuple[np.ndarray, list[int]]]


@pytest.fixture
def dataset(build_dataset: Callable[..., Built]) -> Dataset:
    """40 samples (7 batches, the last one of 4) with a random crop that changes per epoch."""
    built = build_dataset(classes=4, per_class=10, size=48)
    return Dataset(built.path, transform=RandomResizedCrop(16), seed=1)


def _expected(ds: Dataset, epoch: int, first: int = 0) -> Batches:
    """The batches of `epoch` from batch `first`, decoded here."""
    order = EpochBatchSampler(ds, BATCH, seed=SEED).order(epoch).tolist()
    out = []
    for k in range(first * BATCH, len(order), BATCH):
        images, labels = ds.__getitems__(EpochBatch(order[k : k + BATCH], epoch))
        out.append((images, labels.tolist()))
    return out


def _read(batches: Iterable[Any]) -> Batches:
    return [(images.numpy().copy(), labels.tolist()) for images, labels in batches]


def _same(got: Batches, want: Batches, what: str) -> None:
    assert len(got) == len(want), what
    for k, ((images, labels), (want_images, want_labels)) in enumerate(zip(got, want, strict=True)):
        assert labels == want_labels, f"{what}: batch {k}"
        np.testing.assert_array_equal(images, want_images, err_msg=f"{what}: batch {k}")


def _loader(ds: Dataset, *, persistent: bool = True) -> Any:
    return make_loader(
        ds,
        batch_size=BATCH,
        num_workers=2,
        seed=SEED,
        persistent_workers=persistent,
        timeout=TIMEOUT,
    )


@pytest.mark.parametrize("persistent", [True, False])
def test_epochs_yield_their_own_batches(dataset: Dataset, persistent: bool) -> None:
    loader = _loader(dataset, persistent=persistent)
    for epoch in range(3):
        dataset.set_epoch(epoch)
        iterator = iter(loader)
        assert len(iterator) == len(loader) == 7
        _same(_read(iterator), _expected(dataset, epoch), f"epoch {epoch}")


def test_a_jump_or_a_repeat_drops_the_prefetched_epoch(dataset: Dataset) -> None:
    loader = _loader(dataset)
    for epoch in (0, 1, 5, 2, 2, 3):
        dataset.set_epoch(epoch)
        _same(_read(loader), _expected(dataset, epoch), f"epoch {epoch}")


def test_an_epoch_cut_short_then_the_next(dataset: Dataset) -> None:
    loader = _loader(dataset)
    for epoch in (0, 1):
        dataset.set_epoch(epoch)
        first_two = []
        for batch in loader:
            first_two.append(batch)
            if len(first_two) == 2:
                break
        _same(_read(first_two), _expected(dataset, epoch)[:2], f"epoch {epoch} cut")
    _same(_read(loader), _expected(dataset, 1), "epoch 1 again, whole")
    dataset.set_epoch(2)
    _same(_read(loader), _expected(dataset, 2), "epoch 2")


def test_resume_mid_epoch_in_the_same_loader_and_a_new_one(dataset: Dataset) -> None:
    loader = _loader(dataset)
    _same(_read(loader), _expected(dataset, 0), "epoch 0")
    dataset.set_epoch(1)
    iterator = iter(loader)
    head = _read(next(iterator) for _ in range(3))
    _same(head, _expected(dataset, 1)[:3], "epoch 1, first 3")
    state = loader.state_dict()
    assert state["epoch"] == 1
    assert state["position"] == 3 * BATCH
    rest = _read(iterator)
    _same(rest, _expected(dataset, 1, first=3), "epoch 1, the rest")
    dataset.set_epoch(2)
    _same(_read(loader), _expected(dataset, 2), "epoch 2")

    loader.load_state_dict(state)  # back to the middle of epoch 1
    assert dataset.epoch == 1
    _same(_read(loader), _expected(dataset, 1, first=3), "epoch 1 resumed here")
    dataset.set_epoch(2)
    _same(_read(loader), _expected(dataset, 2), "epoch 2 after the resume")

    other = Dataset(dataset.path, transform=RandomResizedCrop(16), seed=1)
    resumed = _loader(other)
    resumed.load_state_dict(state)
    _same(_read(resumed), _expected(other, 1, first=3), "epoch 1 resumed in a new loader")
    other.set_epoch(2)
    _same(_read(resumed), _expected(other, 2), "epoch 2 in the new loader")


def test_a_state_saved_at_the_end_of_an_epoch(dataset: Dataset) -> None:
    loader = _loader(dataset)
    _same(_read(loader), _expected(dataset, 0), "epoch 0")
    state = loader.state_dict()
    assert (state["epoch"], state["position"]) == (0, len(dataset))
    loader.load_state_dict(state)
    assert _read(loader) == []  # nothing left of epoch 0
    dataset.set_epoch(1)
    _same(_read(loader), _expected(dataset, 1), "epoch 1")


def test_an_older_iterator_stops_when_a_newer_one_is_made(dataset: Dataset) -> None:
    loader = _loader(dataset)
    older = iter(loader)
    _same(_read([next(older)]), _expected(dataset, 0)[:1], "the older iterator's first batch")
    newer = iter(loader)
    with pytest.raises(StopIteration):
        next(older)
    _same(_read(newer), _expected(dataset, 0), "the newer iterator, whole")


def test_a_trainer_that_repeats_an_epoch_then_moves_on(dataset: Dataset) -> None:
    """One that never calls `set_epoch`, then does: the stream follows either way."""
    loader = _loader(dataset)
    for epoch in (0, 0, 0, 0, 1, 2, 2, 2, 3):
        dataset.set_epoch(epoch)
        _same(_read(loader), _expected(dataset, epoch), f"epoch {epoch}")


def test_a_mix_yields_its_own_epochs(build_dataset: Callable[..., Built]) -> None:
    one = Dataset(build_dataset(name="one").path, transform=RandomResizedCrop(16), seed=1)
    two = Dataset(build_dataset(name="two", seed=1).path, transform=RandomResizedCrop(16), seed=2)
    mixes = [Mix([(one, 0.6), (two, 0.4)], epoch_size=22, seed=4) for _ in range(2)]
    loaders = [
        make_loader(mix, batch_size=BATCH, num_workers=2, persistent_workers=p, timeout=TIMEOUT)
        for mix, p in zip(mixes, (True, False), strict=True)
    ]
    for epoch in (0, 1, 2, 5, 5):
        got = []
        for mix, loader in zip(mixes, loaders, strict=True):
            mix.set_epoch(epoch)
            got.append(_read(loader))
        assert len(got[0]) == 4
        _same(got[0], got[1], f"mix epoch {epoch}, persistent workers against new ones")


def test_a_worker_skips_the_batches_of_a_stream_run_before(dataset: Dataset) -> None:
    run = multiprocessing.RawValue(ctypes.c_int64, 2)
    fetch = SkipStale(dataset.__getitems__, run)
    batch = pickle.loads(pickle.dumps(StreamBatch([3, 1, 2], 4, [5], run=2)))
    assert (list(batch), batch.epoch, batch.ahead, batch.run) == ([3, 1, 2], 4, [5], 2)
    images, labels = fetch(batch)  # of the current run: decoded
    want_images, want_labels = dataset.__getitems__(EpochBatch([3, 1, 2], 4))
    np.testing.assert_array_equal(images, want_images)
    assert labels.tolist() == want_labels.tolist()
    run.value = 3  # the stream restarted: the batch is stale
    assert fetch(batch) is None
    assert fetch(EpochBatch([3, 1, 2], 4)) is not None  # a batch of no stream: decoded
