"""Shared-memory batch buffers ("slots") that DataLoader workers decode into and reuse.

The trainer creates the slots before the workers start: `per_worker` blocks of one batch each
for every persistent worker, in shared memory that the workers inherit (or receive once, when
spawned). A slot holds one uint8 array per fixed-shape field of a batch (the images, and the
masks that follow them), each on its own pages. A worker decodes a batch into a free slot of its
own and sends the slot's number, the batch length and the labels (with any other field, by
value), a few hundred bytes. torch's default path would instead create a
shared-memory file per tensor per batch, fault in and zero its pages, and pass its descriptor
through a socket that the trainer must connect to and authenticate on.

Whether the trainer still holds a slot is tracked in a small shared array of flags, one per slot:

- a worker claims a free slot (flag 0) by writing its pid, and only ever writes 0 -> pid;
- the trainer lends each batch out as a tensor over a fresh numpy view of the slot; once torch
  has freed that tensor's memory (no tensor, view or numpy array of it is left), the view goes
  and its finalizer writes the flag back to 0; the trainer only ever writes pid -> 0. Batches
  dropped unread (a DataLoader reset) are unpickled and released the same way.

A batch that fits no slot (none free, or images without a transform, whose shape is not known in
advance) goes in fresh shared-memory blocks, torch's way. Workers that do not persist (their
batches could be lost unread when they shut down) use fresh blocks only.

A worker unmaps (`MADV_DONTNEED`) the pages of its other slots whenever it takes one: the data
stays in shared memory for the trainer, but the worker no longer counts it in its own memory
until it writes the slot again (a minor fault per page, far cheaper than a new zeroed page).
"""

from __future__ import annotations

import ctypes
import math
import mmap
import multiprocessing
import os
import sys
import time
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from ..errors import SharedMemoryError
from ..fields import ColumnKind
from ..stats import block, recorder
from .tensors import to_tensors

Labels = npt.NDArray[np.int64]
MADV_DONTNEED = 4  # <sys/mman.h> on Linux
MADV_POPULATE_WRITE = 23  # Linux 5.14: map every page now, in one call
_PAGE = mmap.PAGESIZE


def _libc_madvise() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):  # not a C library with madvise: pages stay mapped
        return None
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    return madvise


_madvise = _libc_madvise() if sys.platform.startswith("linux") else None  # Linux's advice codes


def _advise(tensor: torch.Tensor, advice: int) -> None:
    if _madvise is None:
        return
    start = tensor.data_ptr()
    first = -(-start // _PAGE) * _PAGE
    end = (start + tensor.nbytes) // _PAGE * _PAGE
    if end > first:
        _madvise(first, end - first, advice)  # a refusal (old kernel) leaves things as they are


def unmap_pages(tensor: torch.Tensor) -> None:
    """Drop this process's page mappings of the whole pages inside `tensor`'s memory (shared
    memory keeps the data; the next access maps it again)."""
    _advise(tensor, MADV_DONTNEED)


def map_pages(tensor: torch.Tensor) -> None:
    """Map every page of `tensor`'s memory for writing in one call, instead of a fault each."""
    _advise(tensor, MADV_POPULATE_WRITE)


def new_shared_tensor(shape: tuple[int, ...]) -> torch.Tensor:
    """A uint8 tensor of `shape` in a new shared-memory block (uninitialized, no copy)."""
    # the allocator torch's own reductions use; the public share_memory_() would copy
    storage: torch.UntypedStorage = torch.UntypedStorage._new_shared(  # type: ignore[no-untyped-call]
        math.prod(shape)
    )
    return torch.empty(0, dtype=torch.uint8).set_(storage).view(shape)


Shape = tuple[int, ...]


def _page_bytes(shape: Shape) -> int:
    return -(-math.prod(shape) // _PAGE) * _PAGE


def _slot_tensors(
    shapes: Sequence[Shape], count: int
) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
    """`count` slots in one shared-memory block (one file to create, not `count`): for each
    slot, its whole span and a uint8 tensor of each of `shapes`, each starting on a page
    boundary so that its pages are its own. torch reserves the block's pages at once
    (`posix_fallocate`), so a shortage shows here, not mid-epoch."""
    sizes = [_page_bytes(shape) for shape in shapes]
    stride = sum(sizes)
    try:
        block = new_shared_tensor((count * stride,))
    except RuntimeError as e:
        described = " + ".join(str(shape) for shape in shapes)
        raise SharedMemoryError(
            f"the loader's {count} batch slots of {described} ({count * stride / 2**20:,.0f} "
            f"MiB in all: num_workers x (prefetch_factor + 1) batches) do not fit in shared "
            f"memory (/dev/shm): {e}. Lower batch_size, num_workers or prefetch_factor, or give "
            "the machine or container more shared memory (docker run --shm-size)"
        ) from e
    spans, arrays = [], []
    for k in range(count):
        start = k * stride
        spans.append(block[start : start + stride])
        row = []
        for shape, size in zip(shapes, sizes, strict=True):
            row.append(block[start : start + math.prod(shape)].view(shape))
            start += size
        arrays.append(row)
    return spans, arrays


class _Lease:
    """The arrays of one slot lent to the trainer; the slot is freed when all are gone."""

    def __init__(self, flags: Any, slot: int, pid: int, count: int) -> None:
        self._flags, self._slot, self._pid = flags, slot, pid
        self._left = list(range(count))  # list.pop is atomic: exactly one finalizer pops 0

    def returned(self) -> None:
        if self._left.pop() == 0 and self._flags[self._slot] == self._pid:
            self._flags[self._slot] = 0


@dataclass
class _Tracker:
    """Trainer side: the flags, and numpy views of each slot's arrays to lend batches from."""

    flags: Any  # multiprocessing.RawArray of c_int32
    slots: list[list[npt.NDArray[np.uint8]]]
    arrived: int = 0  # batches rebuilt here
    from_slots: int = 0  # of which in a slot

    def lend(self, slot: int, pid: int, rows: int, arrays: Sequence[int]) -> list[torch.Tensor]:
        """The first `rows` rows of the slot's `arrays` (their positions) as tensors; the slot
        is freed once torch has freed them all."""
        lease = _Lease(self.flags, slot, pid, len(arrays))
        tensors = []
        for k in arrays:
            view = self.slots[slot][k][:rows]  # a new array object, referenced by the tensor only
            weakref.finalize(view, lease.returned).atexit = False
            tensors.append(torch.from_numpy(view))
        return tensors


# trainer side, by pool token; each pool holds its tracker, which goes when the loader goes
_TRACKERS: weakref.WeakValueDictionary[str, _Tracker] = weakref.WeakValueDictionary()


def tracker(token: str) -> _Tracker | None:
    """The trainer-side state of the pool `token` (None in other processes)."""
    return _TRACKERS.get(token)


def _arrived(
    images: torch.Tensor | None, labels: Labels, where: tuple[str, int, int, int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Unpickling a batch in the trainer: the images lent from their slot (`where` is the
    pool's token, the slot, the worker's pid and the batch length) or as they came in a fresh
    block, and the labels as a tensor."""
    token, slot, pid, rows = where
    state = _TRACKERS.get(token)
    if state is not None:
        state.arrived += 1
        if images is None:
            state.from_slots += 1
            images = state.lend(slot, pid, rows, [0])[0]
    if images is None:
        raise RuntimeError(f"batch slot {slot} arrived in a process without its pool {token}")
    return images, torch.from_numpy(labels)


class SlotBatch(tuple[torch.Tensor, torch.Tensor]):
    """`(images, labels)` that, pickled in a worker, unpickle in the trainer via `_arrived`:
    a slot's number instead of its pixels (slot -1: a fresh block, sent torch's way), and the
    labels by value."""

    token: str
    slot: int
    pid: int

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        images = self[0] if self.slot < 0 else None
        where = (self.token, self.slot, self.pid, len(self[1]))
        return _arrived, (images, self[1].numpy(), where)


def _arrived_fields(
    where: tuple[str, int, int, int], kinds: tuple[ColumnKind, ...], sent: list[Any]
) -> tuple[Any, ...]:
    """Unpickling a multi-field batch in the trainer: each `slot` column lent from the slot
    (sent as None) or as it came in a fresh block; the other columns as tensors."""
    token, slot, pid, rows = where
    state = _TRACKERS.get(token)
    lent_columns = [
        k
        for k, (kind, v) in enumerate(zip(kinds, sent, strict=True))
        if kind == "slot" and v is None
    ]
    if lent_columns and state is None:
        raise RuntimeError(f"batch slot {slot} arrived in a process without its pool {token}")
    lent: dict[int, torch.Tensor] = {}
    if state is not None:
        state.arrived += 1
        if lent_columns:
            state.from_slots += 1
            positions = [kinds[:k].count("slot") for k in lent_columns]
            lent = dict(zip(lent_columns, state.lend(slot, pid, rows, positions), strict=True))
    return tuple(
        lent[k] if k in lent else to_tensors(value, kind)
        for k, (kind, value) in enumerate(zip(kinds, sent, strict=True))
    )


class FieldsBatch(tuple[Any, ...]):
    """A multi-field batch as tensors that, pickled in a worker, unpickles in the trainer via
    `_arrived_fields`: the arrays decoded into a slot as the slot's number, fresh blocks
    torch's way, every other column by value (its numpy arrays, a few bytes to a few KiB)."""

    where: tuple[str, int, int, int]
    kinds: tuple[ColumnKind, ...]
    sent: list[Any]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _arrived_fields, (self.where, self.kinds, self.sent)


@dataclass
class _Pending:
    """Worker side: the arrays handed out for the batch being decoded, and its slot."""

    slot: int
    tensors: list[torch.Tensor] = field(default_factory=list)


class BatchSlots:
    """The pool: created in the trainer before the workers start, with `slots_per_worker`
    slots for each worker when `reuse` and the batch's fixed-shape arrays are known: `shapes`
    (one per array, full batch; `shape=` for one array). Each worker uses its copy."""

    def __init__(
        self,
        num_workers: int,
        slots_per_worker: int,
        *,
        shape: Shape | None = None,
        shapes: Sequence[Shape] = (),
        reuse: bool,
    ) -> None:
        if shape is not None and shapes:
            raise ValueError("give shape (one array) or shapes, not both")
        self.token = uuid.uuid4().hex
        self.shapes: tuple[Shape, ...] = (shape,) if shape is not None else tuple(shapes)
        self.shape = self.shapes[0] if self.shapes else None  # the first array: the images
        self.per_worker = slots_per_worker if reuse and self.shapes else 0
        count = num_workers * self.per_worker
        self.flags = multiprocessing.RawArray(ctypes.c_int32, max(count, 1))
        self.spans, self.arrays = _slot_tensors(self.shapes, count) if count else ([], [])
        self.tensors = [row[0] for row in self.arrays]  # each slot's first array
        self.tracker: _Tracker | None = _Tracker(
            self.flags, [[t.numpy() for t in row] for row in self.arrays]
        )
        _TRACKERS[self.token] = self.tracker
        # worker side, set by `start`
        self.first = 0
        self.pid = 0
        self.pending: _Pending | None = None

    def __getstate__(self) -> dict[str, Any]:
        """A spawned worker gets the pool without the trainer's side."""
        state = self.__dict__.copy()
        state["tracker"] = None
        return state

    def start(self, worker_id: int) -> None:
        """In a worker as it starts: its own range of slots."""
        self.first = worker_id * self.per_worker
        self.pid = os.getpid()

    def allocate(self, shape: Shape) -> npt.NDArray[np.uint8]:
        """A uint8 array of `shape` in shared memory. A batch asks for its arrays in the order
        of `shapes`: the first takes a free slot (else the batch goes in new blocks), the
        others come from the same slot; an array that does not fit it gets a new block."""
        start = time.perf_counter_ns()
        pending = self.pending
        if pending is None or len(pending.tensors) >= max(len(self.shapes), 1):
            pending = self.pending = _Pending(self._claim(shape))
            if pending.slot < 0 and self.fits(shape):  # the trainer holds every slot of ours
                recorder.current().count(block.FRESH_BLOCKS)
        k, slot = len(pending.tensors), pending.slot
        if (
            slot >= 0
            and self._fits(k, shape)
            and (k == 0 or shape[0] == pending.tensors[0].shape[0])
        ):
            tensor = self.arrays[slot][k][: shape[0]]
            map_pages(tensor)
        else:
            tensor = new_shared_tensor(shape)
        pending.tensors.append(tensor)
        recorder.current().timed(block.ALLOCATE_NS, time.perf_counter_ns() - start)
        return tensor.numpy()

    def _claim(self, shape: Shape) -> int:
        """A free slot of this worker for a batch whose first array is `shape`, now marked as
        taken (its other slots unmapped here); -1 if none is free or the batch does not fit."""
        if not self.fits(shape):
            return -1
        own = range(self.first, self.first + self.per_worker)
        for slot in own:
            if self.flags[slot] != 0:
                continue
            self.flags[slot] = self.pid
            for other in own:
                if other != slot:
                    unmap_pages(self.spans[other])
            return slot
        return -1

    def _fits(self, k: int, shape: Shape) -> bool:
        if k >= len(self.shapes):
            return False
        slot_shape = self.shapes[k]
        return shape[1:] == slot_shape[1:] and shape[0] <= slot_shape[0]

    def fits(self, shape: Shape) -> bool:
        """Whether a batch whose first array is `shape` fits in a slot."""
        return self.per_worker > 0 and self._fits(0, shape)

    def collate(self, images: npt.NDArray[np.uint8], labels: Labels) -> tuple[torch.Tensor, ...]:
        """The batch as tensors; the images stay in their block (no copy)."""
        pending, self.pending = self.pending, None
        label_tensor = torch.from_numpy(labels)
        if pending is None or pending.tensors[0].data_ptr() != images.ctypes.data:
            return torch.from_numpy(images), label_tensor
        batch = SlotBatch((pending.tensors[0], label_tensor))
        batch.token, batch.slot, batch.pid = self.token, pending.slot, self.pid
        return batch

    def collate_fields(self, values: Sequence[Any], kinds: Sequence[ColumnKind]) -> tuple[Any, ...]:
        """A multi-field batch (one value per column of `kinds`) as tensors and lists; the
        arrays decoded in shared memory stay there (no copy)."""
        pending, self.pending = self.pending, None
        kinds = tuple(kinds)
        arrays = [v for v, kind in zip(values, kinds, strict=True) if kind == "slot"]
        tensors = [] if pending is None else pending.tensors
        if (
            not arrays
            or len(tensors) != len(arrays)
            or any(t.data_ptr() != a.ctypes.data for t, a in zip(tensors, arrays, strict=True))
        ):
            return tuple(to_tensors(v, kind) for v, kind in zip(values, kinds, strict=True))
        slot = pending.slot if pending is not None else -1
        in_slot = iter(
            slot >= 0 and t.data_ptr() == self.arrays[slot][k].data_ptr()
            for k, t in enumerate(tensors)
        )
        tensor_of = iter(tensors)
        out: list[Any] = []
        sent: list[Any] = []
        for value, kind in zip(values, kinds, strict=True):
            if kind == "slot":
                tensor = next(tensor_of)
                out.append(tensor)
                sent.append(None if next(in_slot) else tensor)
            else:
                out.append(to_tensors(value, kind))
                sent.append(value)
        batch = FieldsBatch(out)
        batch.where = (self.token, slot, self.pid, len(arrays[0]))
        batch.kinds, batch.sent = kinds, sent
        return batch
