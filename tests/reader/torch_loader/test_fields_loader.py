"""make_loader with Dataset(fields=...): every field of a batch through real workers, the images
and masks decoded into the shared-memory slots, the rest by value."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fastpack.reader import (
    CenterCrop,
    DaliLoader,
    Dataset,
    EpochBatchSampler,
    Padded,
    RandomResizedCrop,
    make_loader,
)
from fastpack.reader.fields import ColumnKind
from fastpack.reader.order import EpochBatch
from fastpack.reader.torch_loader.batch_slots import BatchSlots, FieldsBatch, tracker

from ..map_style._fields_data import ALL, write_fields_dataset

TIMEOUT = 60


def _same(got: Any, want: Any, where: str) -> None:
    """`got` (a batch value with tensors) holds what `want` (the numpy batch value) holds."""
    if isinstance(want, Padded):
        assert isinstance(got, Padded), where
        _same(got.values, want.values, where)
        _same(got.lengths, want.lengths, where)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, torch.Tensor), where
        np.testing.assert_array_equal(got.numpy(), want, err_msg=where)
    elif isinstance(want, list):
        assert isinstance(got, list), where
        assert len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{k}]")
    elif isinstance(want, np.generic):
        assert isinstance(got, torch.Tensor), where
        assert got.item() == want.item(), where
    else:
        assert got == want, where


def _in_slots(tensor: torch.Tensor, slots: BatchSlots) -> bool:
    address = tensor.data_ptr()
    return any(s.data_ptr() <= address < s.data_ptr() + s.nbytes for s in slots.spans)


@pytest.mark.parametrize("pad", [False, True])
def test_every_field_of_a_batch_through_two_workers(tmp_path: Path, pad: bool) -> None:
    root = write_fields_dataset(tmp_path / "fields", count=14)
    ds = Dataset(root, fields=ALL, transform=RandomResizedCrop(24), seed=2, pad=pad)
    loader = make_loader(ds, batch_size=4, num_workers=2, seed=5, timeout=TIMEOUT)
    slots = loader.collate_fn.__self__.slots  # type: ignore[union-attr]
    assert slots.shapes == ((4, 24, 24, 3), (4, 24, 24))  # images and masks share each slot
    sampler = EpochBatchSampler(ds, 4, seed=5)
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        order = sampler.order(epoch).tolist()
        received = 0
        for b, batch in enumerate(loader):
            rows = EpochBatch(order[4 * b : 4 * b + 4], epoch)
            expected = ds.__getitems__(rows)
            assert len(batch) == len(ALL)
            for name, got, want in zip(ALL, batch, expected, strict=True):
                _same(got, want, f"epoch {epoch} batch {b} field {name}")
            images, masks = batch[0], batch[2]
            assert images.dtype == masks.dtype == torch.uint8
            assert _in_slots(images, slots)
            assert _in_slots(masks, slots)
            assert isinstance(batch[ALL.index("cls")], torch.Tensor)
            boxes = batch[ALL.index("boxes.npy")]
            assert isinstance(boxes, Padded if pad else list)
            assert all(isinstance(t, str) or t is None for t in batch[ALL.index("txt")])
            received += len(rows)
        assert received == len(ds)
    state = tracker(slots.token)
    assert state is not None
    assert 8 <= state.arrived <= 8 + 2 * 2  # with epoch 2's first batches, prefetched
    assert state.from_slots >= 8


def test_a_loader_without_workers_gives_tensors(tmp_path: Path) -> None:
    root = write_fields_dataset(tmp_path / "fields", count=8)  # 8: enough to train a dictionary
    fields = ("ids.json", "seg.png", "cls")
    ds = Dataset(root, fields=fields, transform=RandomResizedCrop(16), pad=True)
    loader = make_loader(ds, batch_size=3, num_workers=0, shuffle=False)
    ids, masks, labels = next(iter(loader))
    assert isinstance(ids, Padded)
    assert ids.lengths.tolist() == [0, 1, 2]
    assert masks.shape == (3, 16, 16)
    assert labels.tolist() == ds.labels[:3].tolist()


def test_slots_hold_every_fixed_array_of_a_batch() -> None:
    shapes = ((2, 4, 4, 3), (2, 4, 4))
    slots = BatchSlots(num_workers=1, slots_per_worker=2, shapes=shapes, reuse=True)
    slots.start(0)  # this process plays the worker and the trainer
    kinds: tuple[ColumnKind, ...] = ("slot", "array", "slot", "list")
    pid = os.getpid()

    def batch(fill: int, rows: int = 2) -> Any:
        images, masks = slots.allocate((rows, 4, 4, 3)), slots.allocate((rows, 4, 4))
        images[:] = fill
        masks[:] = fill + 1
        values = (images, np.arange(rows), masks, ["a", None][:rows])
        return slots.collate_fields(values, kinds)

    first = batch(1)
    assert isinstance(first, FieldsBatch)
    assert first.where[1] == 0  # slot 0
    assert first[2].data_ptr() == slots.arrays[0][1].data_ptr()  # the masks share the slot
    blob = pickle.dumps(first)
    assert len(blob) < 1000  # the arrays travel as the slot's number
    lent = pickle.loads(blob)
    assert type(lent) is tuple
    assert int(lent[0].sum()) == lent[0].numel()
    assert int(lent[2].sum()) == 2 * lent[2].numel()
    assert lent[1].tolist() == [0, 1]
    assert lent[3] == ["a", None]
    assert list(slots.flags) == [pid, 0]
    images = lent[0]
    del lent, first
    assert list(slots.flags) == [pid, 0]  # the images still hold the slot
    del images
    assert list(slots.flags) == [0, 0]  # freed once every array of it is gone

    short = batch(3, rows=1)  # a short batch takes the first rows of a slot
    assert short.where[1] == 0
    assert pickle.loads(pickle.dumps(short))[2].shape == (1, 4, 4)
    slots.flags[0] = slots.flags[1] = pid  # every slot held: fresh blocks, sent torch's way
    fresh = batch(5)
    assert fresh.where[1] == -1
    assert int(pickle.loads(pickle.dumps(fresh))[2].sum()) == 6 * 2 * 16
    plain = slots.collate_fields((np.zeros((2, 4, 4, 3), np.uint8), np.arange(2),
                                  np.zeros((2, 4, 4), np.uint8), []), kinds)  # fmt: skip
    assert not isinstance(plain, FieldsBatch)  # not decoded in shared memory: tensors as is
    assert isinstance(plain[0], torch.Tensor)


def test_make_loader_passes_the_other_fields_to_dali(tmp_path: Path) -> None:
    root = write_fields_dataset(tmp_path / "fields", count=8)
    fields = ("jpg", "cls", "seg.png", "txt")
    ds = Dataset(root, fields=fields, transform=CenterCrop(32))
    loader = make_loader(ds, batch_size=2, num_workers=1, loader="dali")
    assert isinstance(loader, DaliLoader)
    assert [f.name for f in loader.options.fields] == ["seg.png", "txt"]  # beside images, labels
    loader.close()
    plain = make_loader(Dataset(root, transform=CenterCrop(32)), batch_size=2, loader="dali")
    assert isinstance(plain, DaliLoader)
    assert plain.options.fields == ()
    plain.close()
