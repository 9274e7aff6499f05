"""The torch side of `make_loader`; imported only when a loader is made (it imports torch)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from torch.utils.data import DataLoader, get_worker_info

from ..fields import ColumnKind
from ..image.cv2_threads import single_threaded_cv2
from ..streaming.dataset import StreamingDataset
from .batch_slots import BatchSlots

WorkerInit = Callable[[int], None]


class SharedBatches:
    """The workers' side of `make_loader`'s batches: decoded straight into shared memory.

    `install`, the workers' init function, points the worker's dataset at the pool's
    allocator; `collate` sends the block the batch was decoded into, without a copy (see
    `_batch_slots`). Each worker holds its own copy of this object.
    """

    def __init__(
        self,
        slots: BatchSlots,
        user_init: WorkerInit | None = None,
        kinds: Sequence[ColumnKind] | None = None,
    ) -> None:
        """`kinds`: the column kinds of a multi-field batch; None for `(images, labels)`."""
        self.slots = slots
        self.user_init = user_init
        self.kinds = None if kinds is None else tuple(kinds)

    def install(self, worker_id: int) -> None:
        """Run in each worker as it starts."""
        info = get_worker_info()
        if info is not None and hasattr(info.dataset, "batch_allocator"):
            self.slots.start(worker_id)
            info.dataset.batch_allocator = self.slots.allocate
        if self.user_init is not None:
            self.user_init(worker_id)

    def collate(self, batch: tuple[Any, ...]) -> tuple[Any, ...]:
        """A batch from `Dataset.__getitems__` or a batching `StreamingDataset` (`(images,
        labels)` arrays, or one value per field) as tensors."""
        if self.kinds is None:
            return self.slots.collate(*batch)
        return self.slots.collate_fields(batch, self.kinds)


@contextmanager
def frozen_gc() -> Iterator[None]:
    """The trainer's objects moved out of reach of the garbage collector while the block runs.

    A process forked in the block inherits them frozen, so its own collections never write to
    them: their pages stay shared with the trainer instead of being copied into every worker
    (benchmarks/RESULTS.md). The trainer unfreezes them when the block ends and collects them
    as before.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class FastpackLoader(DataLoader[Any]):
    """A DataLoader whose worker processes start with single-threaded OpenCV and with the
    trainer's objects frozen for the garbage collector."""

    def __iter__(self) -> Any:
        if self.num_workers == 0:
            return super().__iter__()
        with single_threaded_cv2(), frozen_gc():  # workers are forked (or re-forked) in here
            return super().__iter__()


class StreamingLoader(FastpackLoader):
    """A FastpackLoader over a `StreamingDataset` that yields whole batches: its length is the
    number of batches of this rank per epoch (the dataset's own length counts samples)."""

    def __len__(self) -> int:
        return cast(StreamingDataset, self.dataset).num_batches(self.num_workers)
