"""Shared-memory batch buffers that DataLoader workers reuse once the trainer has let go of them.

Each batch a worker sends lives in a shared-memory block. A new block per batch costs a page
fault and a zeroed page for every 4 KiB (about a tenth of a worker's time for batches of 64 at
224x224); torch's default path pays that and a copy. So each persistent worker keeps a few blocks
(slots) and decodes into a free one.

Whether the trainer still holds a slot is tracked in a small shared array of flags, one per slot,
created before the workers fork:

- a worker claims a free slot (flag 0) by writing its pid, and only ever writes 0 -> pid;
- every batch is rebuilt in the trainer through `_arrived` (pickle calls it, whether the batch is
  handed to the user or discarded by a DataLoader reset), which keeps a weak reference to the
  batch's storage; once torch has freed that storage (no tensor, view or numpy array of it is
  left), the trainer writes the flag back to 0, and only ever writes pid -> 0.

A worker that finds no free slot allocates a fresh block, as without slots. Workers that do not
persist (their batches could be lost unread when they shut down) use fresh blocks only.

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
import threading
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.multiprocessing.reductions import StorageWeakRef

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


@dataclass
class _Tracker:
    """Trainer side: the flags, and the storages of batches that arrived from slots."""

    flags: Any  # multiprocessing.RawArray of c_int32
    lock: threading.Lock = field(default_factory=threading.Lock)
    held: list[tuple[StorageWeakRef, int, int]] = field(default_factory=list)
    arrived: int = 0  # batches rebuilt here
    from_slots: int = 0  # of which in a reused slot

    def track(self, images: torch.Tensor, slot: int, pid: int) -> None:
        with self.lock:
            self.arrived += 1
            still_held = []
            for ref, held_slot, held_pid in self.held:
                if not ref.expired():  # type: ignore[no-untyped-call]
                    still_held.append((ref, held_slot, held_pid))
                elif self.flags[held_slot] == held_pid:
                    self.flags[held_slot] = 0
            if slot >= 0:
                self.from_slots += 1
                ref = StorageWeakRef(images.untyped_storage())  # type: ignore[no-untyped-call]
                still_held.append((ref, slot, pid))
            self.held = still_held


# trainer side, by pool token; each pool holds its tracker, which goes when the loader goes
_TRACKERS: weakref.WeakValueDictionary[str, _Tracker] = weakref.WeakValueDictionary()


def tracker(token: str) -> _Tracker | None:
    """The trainer-side state of the pool `token` (None in other processes)."""
    return _TRACKERS.get(token)


def _arrived(
    images: torch.Tensor, labels: torch.Tensor, token: str, slot: int, pid: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Unpickling a batch in the trainer: note which slot it occupies, return the plain pair."""
    state = _TRACKERS.get(token)
    if state is not None:
        state.track(images, slot, pid)
    return images, labels


class SlotBatch(tuple[torch.Tensor, torch.Tensor]):
    """`(images, labels)` that, pickled in a worker, unpickle in the trainer via `_arrived`."""

    token: str
    slot: int
    pid: int

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _arrived, (self[0], self[1], self.token, self.slot, self.pid)


class BatchSlots:
    """The pool: created in the trainer before the workers fork; each worker uses its copy."""

    def __init__(self, num_workers: int, slots_per_worker: int, *, reuse: bool) -> None:
        self.token = uuid.uuid4().hex
        self.per_worker = slots_per_worker if reuse else 0
        self.flags = multiprocessing.RawArray(ctypes.c_int32, max(num_workers * self.per_worker, 1))
        self.tracker: _Tracker | None = _Tracker(self.flags)
        _TRACKERS[self.token] = self.tracker
        # worker side, set by `start`
        self.first = 0
        self.pid = 0
        self.tensors: list[torch.Tensor | None] = []
        self.pending: tuple[torch.Tensor, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """A spawned worker gets the pool without the trainer's side (which holds a lock)."""
        state = self.__dict__.copy()
        state["tracker"] = None
        return state

    def start(self, worker_id: int) -> None:
        """In a worker as it starts: its own range of slots."""
        self.first = worker_id * self.per_worker
        self.pid = os.getpid()
        self.tensors = [None] * self.per_worker

    def allocate(self, shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
        """A uint8 array of `shape` in shared memory: a free slot's block, else a new block."""
        for k in range(self.per_worker):
            slot = self.first + k
            if self.flags[slot] != 0:
                continue
            tensor = self.tensors[k]
            if tensor is None or tuple(tensor.shape) != shape:
                tensor = self.tensors[k] = new_shared_tensor(shape)
            self.flags[slot] = self.pid
            for other in self.tensors:
                if other is not None and other is not tensor:
                    unmap_pages(other)
            map_pages(tensor)
            self.pending = (tensor, slot)
            return tensor.numpy()
        tensor = new_shared_tensor(shape)
        self.pending = (tensor, -1)
        return tensor.numpy()

    def collate(self, images: npt.NDArray[np.uint8], labels: Labels) -> tuple[torch.Tensor, ...]:
        """The batch as tensors; the images stay in their block (no copy)."""
        pending, self.pending = self.pending, None
        label_tensor = torch.from_numpy(labels)
        if pending is None or pending[0].data_ptr() != images.ctypes.data:
            return torch.from_numpy(images), label_tensor
        batch = SlotBatch((pending[0], label_tensor))
        batch.token, batch.slot, batch.pid = self.token, pending[1], self.pid
        return batch
