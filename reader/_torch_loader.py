"""The torch side of `make_loader`; imported only when a loader is made (it imports torch)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import torch
from torch.utils.data import DataLoader, get_worker_info

WorkerInit = Callable[[int], None]


class SharedBatches:
    """Batch arrays allocated in shared memory in each worker, so that a batch reaches the
    trainer without a copy.

    A tensor sent from a DataLoader worker is first copied into a new shared-memory block
    (about a tenth of a worker's time for batches of 64 at 224x224). `install`, the workers'
    init function, makes the worker's dataset decode each batch straight into such a block,
    and `collate` sends that block's tensor. Each worker holds its own copy of this object.
    """

    def __init__(self, user_init: WorkerInit | None = None) -> None:
        self.user_init = user_init
        self.pending: torch.Tensor | None = None

    def install(self, worker_id: int) -> None:
        """Run in each worker as it starts: point its dataset at `allocate`."""
        info = get_worker_info()
        if info is not None and hasattr(info.dataset, "batch_allocator"):
            info.dataset.batch_allocator = self.allocate
        if self.user_init is not None:
            self.user_init(worker_id)

    def allocate(self, shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
        """A uint8 array of `shape` in a new shared-memory block."""
        # the allocator torch's own reductions use; the public share_memory_() would copy
        storage: torch.UntypedStorage = torch.UntypedStorage._new_shared(  # type: ignore[no-untyped-call]
            math.prod(shape)
        )
        self.pending = torch.empty(0, dtype=torch.uint8).set_(storage).view(shape)
        return self.pending.numpy()

    def collate(
        self, batch: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`(images, labels)` arrays from `Dataset.__getitems__` as tensors, without a copy."""
        images, labels = batch
        tensor, self.pending = self.pending, None
        if tensor is None or tensor.data_ptr() != images.ctypes.data:
            tensor = torch.from_numpy(images)
        return tensor, torch.from_numpy(labels)


@contextmanager
def single_threaded_cv2() -> Iterator[None]:
    """OpenCV limited to one thread while the block runs, then restored.

    Workers must not run OpenCV thread pools (the workers are the parallelism), yet calling
    `cv2.setNumThreads` in a forked child whose parent had a live pool can deadlock in
    pthread_cond_destroy. So the limit is set in the parent around the fork: children inherit
    a pool-less OpenCV.
    """
    previous = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        yield
    finally:
        cv2.setNumThreads(previous)


class FastpackLoader(DataLoader[Any]):
    """A DataLoader whose worker processes start with single-threaded OpenCV."""

    def __iter__(self) -> Any:
        if self.num_workers == 0:
            return super().__iter__()
        with single_threaded_cv2():  # workers are forked (or re-forked) in here
            return super().__iter__()
