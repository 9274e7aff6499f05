"""Shared-memory batch buffers ("slots") that DataLoader workers decode into and reuse.

The trainer creates the slots before the workers start: `per_worker` blocks of one batch each
for every persistent worker, in shared memory that the workers inherit (or receive once, when
spawned). A worker decodes a batch into a free slot of its own and sends the slot's number, the
batch length and the labels, a few hundred bytes. torch's default path would instead create a
shared-memory file per tensor per batch, fault in and zero its pages, and pass its descriptor
through a socket that the trainer must connect to and authenticate on.

Whether the trainer still holds a slot is tracked in a small shared array of flags, one per slot:

- a worker claims a free slot (flag 0) by writing its pid, and only ever writes 0 -> pid;
- the trainer lends each batch out as a tensor over a fresh numpy view of the slot; once torch
  has freed that tensor's memory (no tensor, view or numpy array of it is left), the view goes
  and its finalizer writes the flag back to 0; the trainer only ever writes pid -> 0. Batches
  dropped unread (a DataLoader reset) are unpickled and released the same way.

A batch that fits no slot (none free, or images without a transform, whose shape is not known in
advance) goes in a fresh shared-memory block, torch's way. Workers that do not persist (their
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
import uuid
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from ..errors import SharedMemoryError

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


def _slot_tensors(shape: tuple[int, ...], count: int) -> list[torch.Tensor]:
    """`count` uint8 tensors of `shape` in one shared-memory block (one file to create, not
    `count`), each starting on a page boundary so that its pages are its own. torch reserves
    the block's pages at once (`posix_fallocate`), so a shortage shows here, not mid-epoch."""
    stride = -(-math.prod(shape) // _PAGE) * _PAGE
    try:
        block = new_shared_tensor((count * stride,))
    except RuntimeError as e:
        raise SharedMemoryError(
            f"the loader's {count} batch slots of {shape} ({count * stride / 2**20:,.0f} MiB "
            f"in all: num_workers x (prefetch_factor + 1) batches) do not fit in shared memory "
            f"(/dev/shm): {e}. Lower batch_size, num_workers or prefetch_factor, or give the "
            "machine or container more shared memory (docker run --shm-size)"
        ) from e
    return [block[k * stride : k * stride + math.prod(shape)].view(shape) for k in range(count)]


@dataclass
class _Tracker:
    """Trainer side: the flags, and numpy views of the slots to lend batches from."""

    flags: Any  # multiprocessing.RawArray of c_int32
    slots: list[npt.NDArray[np.uint8]]
    arrived: int = 0  # batches rebuilt here
    from_slots: int = 0  # of which in a slot

    def lend(self, slot: int, pid: int, rows: int) -> torch.Tensor:
        """The first `rows` images of `slot` as a tensor; the slot is freed with its memory."""
        view = self.slots[slot][:rows]  # a new array object, referenced by the tensor only
        weakref.finalize(view, self._release, slot, pid).atexit = False
        return torch.from_numpy(view)

    def _release(self, slot: int, pid: int) -> None:
        if self.flags[slot] == pid:
            self.flags[slot] = 0


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
            images = state.lend(slot, pid, rows)
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


class BatchSlots:
    """The pool: created in the trainer before the workers start, with `slots_per_worker`
    slots of `shape` (a full batch) for each worker when `reuse` and `shape` is known; each
    worker uses its copy."""

    def __init__(
        self,
        num_workers: int,
        slots_per_worker: int,
        *,
        shape: tuple[int, ...] | None,
        reuse: bool,
    ) -> None:
        self.token = uuid.uuid4().hex
        self.shape = shape
        self.per_worker = slots_per_worker if reuse and shape is not None else 0
        count = num_workers * self.per_worker
        self.flags = multiprocessing.RawArray(ctypes.c_int32, max(count, 1))
        self.tensors = _slot_tensors(shape, count) if shape else []
        self.tracker: _Tracker | None = _Tracker(self.flags, [t.numpy() for t in self.tensors])
        _TRACKERS[self.token] = self.tracker
        # worker side, set by `start`
        self.first = 0
        self.pid = 0
        self.pending: tuple[torch.Tensor, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """A spawned worker gets the pool without the trainer's side."""
        state = self.__dict__.copy()
        state["tracker"] = None
        return state

    def start(self, worker_id: int) -> None:
        """In a worker as it starts: its own range of slots."""
        self.first = worker_id * self.per_worker
        self.pid = os.getpid()

    def allocate(self, shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
        """A uint8 array of `shape` in shared memory: in a free slot, else in a new block."""
        if self.fits(shape):
            own = range(self.first, self.first + self.per_worker)
            for slot in own:
                if self.flags[slot] != 0:
                    continue
                self.flags[slot] = self.pid
                for other in own:
                    if other != slot:
                        unmap_pages(self.tensors[other])
                tensor = self.tensors[slot][: shape[0]]
                map_pages(tensor)
                self.pending = (tensor, slot)
                return tensor.numpy()
        tensor = new_shared_tensor(shape)
        self.pending = (tensor, -1)
        return tensor.numpy()

    def fits(self, shape: tuple[int, ...]) -> bool:
        """Whether a batch of `shape` fits in a slot."""
        return (
            self.per_worker > 0
            and self.shape is not None
            and shape[1:] == self.shape[1:]
            and shape[0] <= self.shape[0]
        )

    def collate(self, images: npt.NDArray[np.uint8], labels: Labels) -> tuple[torch.Tensor, ...]:
        """The batch as tensors; the images stay in their block (no copy)."""
        pending, self.pending = self.pending, None
        label_tensor = torch.from_numpy(labels)
        if pending is None or pending[0].data_ptr() != images.ctypes.data:
            return torch.from_numpy(images), label_tensor
        batch = SlotBatch((pending[0], label_tensor))
        batch.token, batch.slot, batch.pid = self.token, pending[1], self.pid
        return batch
