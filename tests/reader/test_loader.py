"""make_loader and to_float: batches through real DataLoader workers, epochs, normalization."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from fastpack.reader import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    CenterCrop,
    Dataset,
    EpochBatchSampler,
    RandomResizedCrop,
    make_loader,
    to_float,
)

from .conftest import Built

TIMEOUT = 60  # seconds a worker may take per batch; a hung worker fails the test


def _record(directory: Path, worker_id: int) -> None:
    (directory / f"worker-{worker_id}").write_text(str(cv2.getNumThreads()))


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


def test_workers_decode_into_shared_memory(build_dataset: Callable[..., Built]) -> None:
    from fastpack.reader._torch_loader import SharedBatches  # noqa: PLC0415

    batches = SharedBatches()
    array = batches.allocate((2, 3, 4, 3))
    array[:] = 5
    labels = np.arange(2)
    images, _ = batches.collate((array, labels))
    assert images.is_shared()
    assert int(images.sum()) == 5 * array.size  # the tensor is the array, not a copy
    array[0, 0, 0, 0] = 9
    assert int(images[0, 0, 0, 0]) == 9
    other = np.zeros((2, 3, 4, 3), np.uint8)  # an array it did not allocate is wrapped as is
    wrapped, _ = batches.collate((other, labels))
    assert not wrapped.is_shared()
    assert wrapped.data_ptr() == other.ctypes.data

    ds = Dataset(build_dataset(classes=2, per_class=5).path, transform=CenterCrop(16))
    expected = ds.__getitems__(list(range(len(ds))))[0]
    loader = make_loader(ds, batch_size=4, num_workers=2, shuffle=False, timeout=TIMEOUT)
    received = torch.cat([images for images, _ in loader])
    np.testing.assert_array_equal(received.numpy(), expected)
    assert ds.batch_allocator is None  # only the workers' copies allocate in shared memory
