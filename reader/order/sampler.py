"""Batches of sample indices in an epoch's order, each carrying the epoch it belongs to: what
every loader reads (the torch DataLoader, DALI's feed), free of torch and DALI.

A DataLoader calls `Dataset.__getitems__` with each batch this sampler yields; the batch's
`epoch` reaches the workers with it, so random transforms follow `set_epoch` even in persistent
workers, which keep the dataset copy they started with.

Under distributed training each rank reads its own share of the epoch's order, and every rank
gets the same number of batches, so no rank waits for a batch another never sends.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np

from ..ranks import resolve_rank
from .epoch_order import EpochOrder, PermutedOrder
from .state import epoch_limit

_CHUNK_SAMPLES = 8192  # samples per permutation evaluation (64 KiB of indices)


class EpochBatch(list[int]):
    """A list of sample indices tagged with an epoch, and with the indices of the batch that
    the same DataLoader worker reads next (`ahead`, None when unknown): a worker reading from a
    network file system starts on them while it decodes this one."""

    def __init__(self, indices: Iterable[int], epoch: int, ahead: list[int] | None = None) -> None:
        super().__init__(indices)
        self.epoch = epoch
        self.ahead = ahead

    def __reduce__(self) -> tuple[type[EpochBatch], tuple[list[int], int, list[int] | None]]:
        return EpochBatch, (list(self), self.epoch, self.ahead)


class EpochSource(Protocol):
    """What a loader reads its order from: a dataset's length and current epoch (a `Dataset`
    or a `Mix`, whose `set_epoch` sets it). One with an order of its own, a balanced view or a
    `Mix`, also has `epoch_order(seed, shuffle)`."""

    @property
    def epoch(self) -> int: ...

    def __len__(self) -> int: ...


def epoch_order_of(dataset: EpochSource, seed: int, shuffle: bool) -> EpochOrder:
    """The dataset's own order (`epoch_order`), else its samples in a keyed permutation."""
    own = getattr(dataset, "epoch_order", None)
    if own is not None:
        order: EpochOrder = own(seed, shuffle)
        return order
    return PermutedOrder(len(dataset), seed, shuffle=shuffle)


class EpochBatchSampler:
    """Batches over `range(len(dataset))`, shuffled by `(seed, dataset.epoch)` when `shuffle`.

    The order is a function of the seed and the epoch only (call `dataset.set_epoch` before each
    epoch, as with `DistributedSampler`), so an interrupted run can replay it. It is a keyed
    permutation evaluated 8192 samples at a time: the first batch costs the same at any dataset
    size, and the whole order is never held in memory. A dataset with an order of its own
    (`epoch_order`: a balanced view, a `Mix`) is read in that order instead, of its length.

    With `world_size` ranks, rank `rank` takes every `world_size`-th position of the order from
    position `start + rank` (`start` 0 but where `resume_at` says otherwise). Every rank gets
    `ceil(M / world_size)` samples of the `M = L - start` left of the order's `L`, the order
    padded with its first samples after `start`, or `floor(M / world_size)` with `drop_last`
    (which also drops a last partial batch). So after `n` batches on every rank the positions
    read are exactly `[start, start + n * batch_size * world_size)`, from which any number of
    ranks with any batch size can go on (`resume_at`). `rank` and
    `world_size` default to torch.distributed's when a process group is initialized, else to
    the RANK and WORLD_SIZE environment variables, else to (0, 1).

    `ahead_stride` k > 0 tags each batch with the batch k places later (`EpochBatch.ahead`):
    with k = the DataLoader's worker count, which hands batches to its workers in turn, that
    is the batch the same worker reads next.
    """

    def __init__(  # noqa: PLR0913 -- public signature
        self,
        dataset: EpochSource,
        batch_size: int,
        *,
        shuffle: bool = True,
        drop_last: bool = False,
        seed: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        ahead_stride: int = 0,
    ) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = seed
        self.rank, self.world_size = resolve_rank(rank, world_size)
        if ahead_stride < 0:
            raise ValueError(f"ahead_stride must be >= 0, got {ahead_stride}")
        self.ahead_stride = ahead_stride
        self.epoch_order = epoch_order_of(dataset, seed, shuffle)
        self._resume: tuple[int, int] | None = None  # (epoch, start) of the next iteration
        self._running: tuple[int, int] | None = None  # (epoch, start) of the current one
        self._begun = False  # `begin` ran for the iteration about to start

    def resume_at(self, epoch: int, position: int) -> None:
        """Start the next iteration over epoch `epoch` at `position` of its order (an
        iteration over another epoch starts at 0, and clears this). Both are integers (a float
        or a string is a TypeError, never rounded), `epoch` within what the order's int64
        arithmetic holds (`order.state.epoch_limit`)."""
        epoch, position = operator.index(epoch), operator.index(position)
        length = len(self.epoch_order)
        if not 0 <= epoch <= epoch_limit(length):
            raise ValueError(f"epoch must be in [0, {epoch_limit(length)}], got {epoch}")
        if not 0 <= position <= length:
            raise ValueError(f"position must be in [0, {length}], got {position}")
        self._resume = (epoch, position)

    def start(self) -> int:
        """Where in the order the current iteration started (or the next one starts, when a
        resume is pending for the dataset's epoch)."""
        epoch = self.dataset.epoch
        for pending in (self._resume, self._running):
            if pending is not None and pending[0] == epoch:
                return pending[1]
        return 0

    def begin(self) -> int:
        """Fix where the next iteration starts (a pending resume of this epoch, else 0), and
        return it; the iteration then starts there even if it begins later (a DataLoader
        pulls its first indices when its iterator is made, or on the first `next`)."""
        epoch = self.dataset.epoch
        resume = self._resume
        start = resume[1] if resume is not None and resume[0] == epoch else 0
        self._running, self._resume, self._begun = (epoch, start), None, True
        return start

    def samples_per_rank(self, start: int | None = None) -> int:
        """This rank's samples in an iteration from `start` (default: `start()`)."""
        start = self.start() if start is None else start
        n, world = len(self.epoch_order) - start, self.world_size
        return n // world if self.drop_last else -(-n // world)

    def __len__(self) -> int:
        return self._num_batches(self.start())

    def _num_batches(self, start: int) -> int:
        n, b = self.samples_per_rank(start), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def order(self, epoch: int) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
        """The sample order of `epoch`, over all ranks (materialised: for inspection)."""
        return self._samples(epoch, np.arange(len(self.epoch_order), dtype=np.int64))

    def _samples(self, epoch: int, positions: np.ndarray) -> np.ndarray:
        """The samples at `positions` of the epoch's order, evaluated at those positions only
        (a keyed permutation: no order of N samples is built)."""
        return self.epoch_order.samples(epoch, positions)

    def _rank_samples(self, epoch: int, start: int, first: int, stop: int) -> np.ndarray:
        """This rank's samples `[first, stop)` of an iteration from `start`: positions
        `start + rank + k * world_size` of the order, wrapping to `start` past the end (the
        padding)."""
        left = len(self.epoch_order) - start
        if left <= 0:
            return np.zeros(0, np.int64)
        ks = np.arange(first, stop, dtype=np.int64)
        return self._samples(epoch, start + (self.rank + ks * self.world_size) % left)

    def __iter__(self) -> Iterator[EpochBatch]:
        return tag_ahead(self._batches(), self.ahead_stride)

    def _batches(self) -> Iterator[EpochBatch]:
        if not self._begun:
            self.begin()
        self._begun = False
        epoch, start = self._running or (self.dataset.epoch, 0)  # `begin` set it
        yield from self._epoch_batches(epoch, start)

    def batches(self, epoch: int, start: int) -> Iterator[EpochBatch]:
        """This rank's batches of an iteration over `epoch` from position `start` of its order,
        without `ahead`: a function of the arguments and the sampler's settings only, so that
        a loader may compute an epoch's batches before the epoch begins."""
        return self._epoch_batches(epoch, start)

    def _epoch_batches(self, epoch: int, start: int) -> Iterator[EpochBatch]:
        total, b = self.samples_per_rank(start), self.batch_size
        count = self._num_batches(start)
        per_chunk = max(1, _CHUNK_SAMPLES // b)  # batches evaluated together: fewer numpy calls
        for first in range(0, count, per_chunk):
            last = min(first + per_chunk, count)
            rows = self._rank_samples(epoch, start, first * b, min(last * b, total)).tolist()
            for k in range(last - first):
                yield EpochBatch(rows[k * b : (k + 1) * b], epoch)


def tag_ahead(batches: Iterable[EpochBatch], stride: int) -> Iterator[EpochBatch]:
    """`batches`, each tagged with the batch `stride` places later (`EpochBatch.ahead`) when
    `stride` > 0; the last `stride` keep theirs."""
    if stride == 0:
        yield from batches
        return
    waiting: deque[EpochBatch] = deque()
    for batch in batches:
        waiting.append(batch)
        if len(waiting) > stride:
            first = waiting.popleft()
            first.ahead = list(batch)
            yield first
    yield from waiting
