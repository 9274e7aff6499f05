"""make_loader and to_float: batches through real DataLoader workers, epochs, normalization."""

from __future__ import annotations

import gc
import mmap
import os
import pickle
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import torch
from fastpack.formats import FastpackError
from fastpack.reader import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    CenterCrop,
    Dataset,
    EpochBatchSampler,
    RandomResizedCrop,
    SharedMemoryError,
    make_loader,
    to_float,
)
from fastpack.reader.order import EpochBatch
from fastpack.reader.torch_loader.batch_slots import BatchSlots, SlotBatch, tracker

from ..conftest import Built

TIMEOUT = 60  # seconds a worker may take per batch; a hung worker fails the test


def _record(directory: Path, worker_id: int) -> None:
    (directory / f"worker-{worker_id}").write_text(str(cv2.getNumThreads()))
    (directory / f"frozen-{worker_id}").write_text(str(gc.get_freeze_count()))


def test_every_index_once_per_epoch(build_dataset: Callable[..., Built], tmp_path: Path) -> None:
    ds = Dataset(build_dataset(classes=4, per_class=6).path, transform=CenterCrop(16))
    expected = {ds[i][0].tobytes(): i for i in range(len(ds))}
    assert len(expected) == len(ds) == 24
    loader = make_loader(
        ds,
        batch_size=5,
        num_workers=2,
        seed=11,
        worker_init_fn=partial(_record, tmp_path),
        timeout=TIMEOUT,
    )
    assert len(loader) == 5
    orders = []
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        order = []
        for images, labels in loader:
            assert images.dtype == torch.uint8
            assert labels.dtype == torch.int64
            assert images.shape[1:] == (16, 16, 3)
            assert images.shape[0] == labels.shape[0] <= 5
            for image, label in zip(images.numpy(), labels.tolist(), strict=True):
                i = expected[image.tobytes()]
                assert label == ds.labels[i]
                order.append(i)
        assert sorted(order) == list(range(24))
        assert order == EpochBatchSampler(ds, 5, seed=11).order(epoch).tolist()
        orders.append(order)
    assert orders[0] != orders[1]
    workers = {p.name: p.read_text() for p in tmp_path.glob("worker-*")}
    assert workers == {"worker-0": "1", "worker-1": "1"}  # OpenCV single-threaded in workers
    frozen = [int(p.read_text()) for p in tmp_path.glob("frozen-*")]
    assert len(frozen) == 2
    assert min(frozen) > 1000  # the trainer's objects reach the workers frozen
    assert gc.get_freeze_count() == 0  # and are collected in the trainer as before


def test_workers_start_after_opencv_ran_in_parent(build_dataset: Callable[..., Built]) -> None:
    """OpenCV's thread pool, live in the parent, must not deadlock the forked workers."""
    ds = Dataset(build_dataset(per_class=2).path, transform=RandomResizedCrop(16))
    threads = cv2.getNumThreads()
    big = np.zeros((2000, 2000, 3), np.uint8)
    for epoch in range(4):
        cv2.resize(big, (500, 500), interpolation=cv2.INTER_AREA)  # wakes the parent's pool
        ds.set_epoch(epoch)
        loader = make_loader(ds, batch_size=3, num_workers=2, timeout=TIMEOUT)
        assert sum(len(labels) for _, labels in loader) == len(ds)
    assert cv2.getNumThreads() == threads


@pytest.mark.parametrize("persistent", [False, True])
def test_workers_follow_set_epoch(build_dataset: Callable[..., Built], persistent: bool) -> None:
    ds = Dataset(build_dataset(per_class=2).path, transform=RandomResizedCrop(24), seed=5)
    loader = make_loader(
        ds,
        batch_size=4,
        shuffle=False,
        num_workers=2,
        persistent_workers=persistent,
        timeout=TIMEOUT,
    )
    for epoch in (0, 1, 2):
        ds.set_epoch(epoch)
        images = torch.cat([batch[0] for batch in loader]).numpy()
        np.testing.assert_array_equal(images, ds.__getitems__(list(range(len(ds))))[0])


def test_loader_without_workers(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset().path, transform=CenterCrop(8))
    loader = make_loader(ds, batch_size=5, num_workers=0, drop_last=True, shuffle=False)
    batches = list(loader)
    assert [len(b[1]) for b in batches] == [5, 5]
    assert torch.cat([b[1] for b in batches]).tolist() == ds.labels[:10].tolist()


def test_to_float_normalizes() -> None:
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.integers(0, 256, (2, 5, 7, 3), dtype=np.uint8))
    out = to_float(images, device="cpu")
    assert out.shape == (2, 3, 5, 7)
    assert out.dtype == torch.float32
    assert out.is_contiguous(memory_format=torch.channels_last)
    mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
    expected = (images.numpy().astype(np.float64) / 255 - mean) / std
    np.testing.assert_allclose(out.numpy(), expected.transpose(0, 3, 1, 2), atol=1e-5)
    plain = to_float(images, channels_last=False)
    assert plain.is_contiguous()
    assert torch.equal(plain, out)
    assert torch.equal(to_float(images[1]), out[1])
    assert images.dtype == torch.uint8  # the input is left as it was
    custom = to_float(images, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    np.testing.assert_allclose(custom.numpy() * 255, images.permute(0, 3, 1, 2).numpy())


def test_to_float_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"expected a uint8 \(B, H, W, C\) .*torch.float32"):
        to_float(torch.zeros(1, 4, 4, 3))
    with pytest.raises(ValueError, match="mean and std need 4 values"):
        to_float(torch.zeros(1, 4, 4, 4, dtype=torch.uint8))


def _expected_batches(ds: Dataset, batch_size: int, epoch: int) -> list[np.ndarray]:
    sampler = EpochBatchSampler(ds, batch_size, seed=0)
    order = sampler.order(epoch)
    return [
        ds.__getitems__(EpochBatch(order[b : b + batch_size].tolist(), epoch))[0]
        for b in range(0, len(ds), batch_size)
    ]


def test_batch_slots_are_reused_only_when_released() -> None:
    shape = (2, 4, 4, 3)
    slots = BatchSlots(num_workers=1, slots_per_worker=2, shape=shape, reuse=True)
    slots.start(0)  # this process plays the worker; `state` is the trainer's side
    state = tracker(slots.token)
    assert state is not None
    pid, labels = os.getpid(), np.arange(2)

    batches = []
    for k in range(3):
        images = slots.allocate(shape)
        images[:] = k
        batch = slots.collate(images, labels)
        assert isinstance(batch, SlotBatch)
        batches.append(batch)
    assert [b.slot for b in batches] == [0, 1, -1]  # both slots taken: a fresh block
    assert list(slots.flags) == [pid, pid]
    assert batches[0][0].data_ptr() == slots.tensors[0].data_ptr()
    assert _is_shared(batches[2][0])

    # a slot travels as its number (a few hundred bytes), a fresh block as torch shares it
    sizes = [len(pickle.dumps(b)) for b in batches]
    assert max(sizes[:2]) < 1000
    fresh = pickle.loads(pickle.dumps(batches[2]))
    assert type(fresh) is tuple
    assert int(fresh[0].sum()) == 2 * fresh[0].numel()
    np.testing.assert_array_equal(fresh[1].numpy(), labels)

    # in the trainer a slot's batch is lent from the trainer's own map of the slot
    lent = [pickle.loads(pickle.dumps(b)) for b in batches[:2]]
    assert lent[0][0].data_ptr() == slots.tensors[0].data_ptr()
    assert int(lent[1][0].sum()) == lent[1][0].numel()
    assert (state.arrived, state.from_slots) == (3, 2)
    view = lent[0][0][1]
    del lent[0]
    assert list(slots.flags) == [pid, pid]  # a view keeps its slot held
    del view
    assert list(slots.flags) == [0, pid]
    slots.flags[1] = pid + 1  # a slot claimed by another process is not the trainer's to free
    del lent[0]
    assert list(slots.flags) == [0, pid + 1]
    again = slots.allocate(shape)
    assert again.ctypes.data == slots.tensors[0].data_ptr()  # the slot is reused
    assert slots.flags[0] == pid

    # a shorter last batch takes the first rows of a slot; another shape gets a fresh block
    slots.flags[0] = slots.flags[1] = 0
    short = slots.allocate((1, 4, 4, 3))
    assert short.ctypes.data == slots.tensors[0].data_ptr()
    assert pickle.loads(pickle.dumps(slots.collate(short, labels[:1])))[0].shape == (1, 4, 4, 3)
    other = slots.allocate((2, 8, 8, 3))
    assert slots.collate(other, labels).slot == -1  # type: ignore[attr-defined]


def _in_shared_memory(images: torch.Tensor, loader: Any) -> bool:
    """Whether a received batch lies in one of the pool's slots or in a shared block."""
    address = images.data_ptr()
    slots = loader.collate_fn.__self__.slots.tensors
    lent = any(t.data_ptr() <= address < t.data_ptr() + t.nbytes for t in slots)
    return lent or _is_shared(images)


def _is_shared(tensor: torch.Tensor) -> bool:
    """`tensor.is_shared()`, asked of its storage: torch leaves `Tensor.is_shared` untyped."""
    return tensor.untyped_storage().is_shared()


def test_held_batches_stay_intact(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset(classes=3, per_class=12).path, transform=RandomResizedCrop(16))
    loader = make_loader(ds, batch_size=4, num_workers=2, seed=0, timeout=TIMEOUT)
    kept = []
    for epoch in range(4):
        ds.set_epoch(epoch)
        for n, (images, _) in enumerate(loader):
            if epoch == 0:
                kept.append(images)  # every batch of epoch 0 stays held
            elif epoch == 1 and n % 3 == 0:
                kept.append(images[1:3])  # a view holds its whole block
            if epoch == 2 and n == 2:
                break  # an epoch cut short
    expected = _expected_batches(ds, 4, 0)
    assert len(kept) == len(expected) + 3
    for got, want in zip(kept, expected, strict=False):
        np.testing.assert_array_equal(got.numpy(), want)
    second = _expected_batches(ds, 4, 1)
    for got, k in zip(kept[len(expected) :], (0, 3, 6), strict=True):
        np.testing.assert_array_equal(got.numpy(), second[k][1:3])
    ds.set_epoch(3)
    received = [images.numpy().copy() for images, _ in loader]
    for got, want in zip(received, _expected_batches(ds, 4, 3), strict=True):
        np.testing.assert_array_equal(got, want)


def test_workers_decode_into_shared_memory(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset(classes=2, per_class=5).path, transform=CenterCrop(16))
    expected = ds.__getitems__(list(range(len(ds))))[0]
    for persistent in (True, False):
        loader = make_loader(
            ds,
            batch_size=4,
            num_workers=2,
            shuffle=False,
            persistent_workers=persistent,
            timeout=TIMEOUT,
        )
        for _ in range(3):
            batches = []
            for images, _ in loader:
                assert _in_shared_memory(images, loader)
                batches.append(images.numpy().copy())  # the block itself is let go
            np.testing.assert_array_equal(np.concatenate(batches), expected)
        state = tracker(loader.collate_fn.__self__.slots.token)  # type: ignore[union-attr]
        assert state is not None
        if persistent:  # prefetch_factor + 1 slots per worker: one is free for each batch
            # read; the next epoch's first batches, prefetched, arrive too, and are dropped
            # when the next iteration is over another epoch (here the same one again)
            assert 9 <= state.arrived <= 9 + 3 * 2 * 2
            assert state.from_slots >= 9
        else:  # workers that stop at the end of each epoch get no slots
            assert state.arrived == 9
            assert state.from_slots == 0
    assert ds.batch_allocator is None  # only the workers' copies allocate in shared memory


def _mapped_kib(array: np.ndarray) -> int:
    """KiB of `array`'s pages that this process has mapped now (the present bit of each page
    in /proc/self/pagemap: this process's page table, not the page cache)."""
    page = mmap.PAGESIZE
    first, last = array.ctypes.data // page, (array.ctypes.data + array.nbytes - 1) // page
    with open("/proc/self/pagemap", "rb") as pagemap:
        pagemap.seek(first * 8)
        entries = np.frombuffer(pagemap.read((last - first + 1) * 8), np.uint64)
    present = int(np.count_nonzero(entries >> np.uint64(63)))
    return present * page // 1024


def test_a_worker_maps_only_the_slot_it_writes() -> None:
    shape = (4, 64, 64, 3)  # 48 KiB
    slots = BatchSlots(num_workers=1, slots_per_worker=2, shape=shape, reuse=True)
    slots.start(0)
    first = slots.allocate(shape)
    first[:] = 3
    slots.collate(first, np.arange(4))
    assert _mapped_kib(first) >= 48
    second = slots.allocate(shape)  # the first is still held by the trainer
    assert _mapped_kib(second) >= 48  # mapped in one call, before it is written
    assert _mapped_kib(first) == 0  # unmapped here, kept in shared memory
    assert int(first.sum()) == 3 * first.size  # and read back intact


def test_spawned_workers(build_dataset: Callable[..., Built]) -> None:
    """Workers started by spawn (macOS, Windows, or asked for) get the pool by pickle."""
    ds = Dataset(build_dataset(classes=2, per_class=6).path, transform=CenterCrop(16))
    expected = ds.__getitems__(list(range(len(ds))))[0]
    loader = make_loader(
        ds,
        batch_size=4,
        num_workers=1,
        shuffle=False,
        multiprocessing_context="spawn",
        timeout=TIMEOUT,
    )
    for _ in range(2):
        received = [images.numpy().copy() for images, _ in loader]
        np.testing.assert_array_equal(np.concatenate(received), expected)
    state = tracker(loader.collate_fn.__self__.slots.token)  # type: ignore[union-attr]
    assert state is not None
    assert 6 <= state.arrived <= 6 + 2 * 2  # with the prefetched batches of the next epoch
    assert state.from_slots >= 6


def test_slots_larger_than_shared_memory_are_refused_when_the_loader_is_made(
    build_dataset: Callable[..., Built],
) -> None:
    """Slots are reserved up front: a shortage is a clear error then, not a crash mid-epoch."""
    shm = os.statvfs("/dev/shm")
    side = 4096
    batch_size = -(-2 * shm.f_frsize * shm.f_blocks // (side * side * 3))  # twice /dev/shm
    ds = Dataset(build_dataset(classes=2, per_class=2).path, transform=CenterCrop(side))
    with pytest.raises(SharedMemoryError) as caught:
        make_loader(ds, batch_size=batch_size, num_workers=1, timeout=TIMEOUT)
    message = str(caught.value)
    assert f"the loader's 3 batch slots of ({batch_size}, {side}, {side}, 3)" in message
    assert "do not fit in shared memory (/dev/shm)" in message
    assert "Lower batch_size, num_workers or prefetch_factor" in message
    assert isinstance(caught.value, FastpackError)
