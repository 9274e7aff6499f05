"""Batches of sample indices for a DataLoader, each carrying the epoch it belongs to (torch-free).

A DataLoader calls `Dataset.__getitems__` with each batch this sampler yields; the batch's
`epoch` reaches the workers with it, so random transforms follow `set_epoch` even in persistent
workers, which keep the dataset copy they started with.

Under distributed training each rank reads its own share of the epoch's order, and every rank
gets the same number of batches, so no rank waits for a batch another never sends.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np

from ..ranks import resolve_rank
from .permutation import KeyedPermutation

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
    """What the sampler reads from the dataset: its length and current epoch."""

    epoch: int

    def __len__(self) -> int: ...


class EpochBatchSampler:
    """Batches over `range(len(dataset))`, shuffled by `(seed, dataset.epoch)` when `shuffle`.

    The order is a function of the seed and the epoch only (call `dataset.set_epoch` before each
    epoch, as with `DistributedSampler`), so an interrupted run can replay it. It is a keyed
    permutation evaluated 8192 samples at a time: the first batch costs the same at any dataset
    size, and the whole order is never held in memory.

    With `world_size` ranks, rank `rank` takes every `world_size`-th sample of the order from
    position `rank`. Every rank gets `ceil(N / world_size)` samples, the order padded with its
    first samples, or `floor(N / world_size)` with `drop_last` (which also drops a last partial
    batch). `rank` and `world_size` default to torch.distributed's when a process group is
    initialized, else to the RANK and WORLD_SIZE environment variables, else to (0, 1).

    `ahead_stride` k > 0 tags each batch with the batch k places later (`EpochBatch.ahead`):
    with k = the DataLoader's worker count, which hands batches to its workers in turn, that
    is the batch the same worker reads next.
    """

    def __init__(
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

    def samples_per_rank(self) -> int:
        n, world = len(self.dataset), self.world_size
        return n // world if self.drop_last else -(-n // world)

    def __len__(self) -> int:
        n, b = self.samples_per_rank(), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def order(self, epoch: int) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
        """The sample order of `epoch`, over all ranks (materialised: for inspection)."""
        return self._samples(epoch, np.arange(len(self.dataset), dtype=np.int64))

    def rank_order(self, epoch: int) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
        """The samples this rank reads in `epoch`, in order (materialised)."""
        return self._rank_samples(epoch, 0, self.samples_per_rank())

    def _samples(self, epoch: int, positions: np.ndarray) -> np.ndarray:
        """The samples at `positions` of the epoch's order: a keyed permutation evaluated at
        those positions only (see `_permutation`), so no order of N samples is built."""
        if not self.shuffle:
            return positions
        return KeyedPermutation(len(self.dataset), self.seed, epoch)(positions)

    def _rank_samples(self, epoch: int, start: int, stop: int) -> np.ndarray:
        """This rank's samples `[start, stop)`: positions `rank + k * world_size` of the order,
        wrapping to its start past the end (the padding)."""
        n = len(self.dataset)
        if n == 0:
            return np.zeros(0, np.int64)
        ks = np.arange(start, stop, dtype=np.int64)
        return self._samples(epoch, (self.rank + ks * self.world_size) % n)

    def __iter__(self) -> Iterator[EpochBatch]:
        stride = self.ahead_stride
        if stride == 0:
            yield from self._batches()
            return
        waiting: deque[EpochBatch] = deque()
        for batch in self._batches():
            waiting.append(batch)
            if len(waiting) > stride:
                first = waiting.popleft()
                first.ahead = list(batch)
                yield first
        yield from waiting

    def _batches(self) -> Iterator[EpochBatch]:
        epoch = self.dataset.epoch
        total, b = self.samples_per_rank(), self.batch_size
        per_chunk = max(1, _CHUNK_SAMPLES // b)  # batches evaluated together: fewer numpy calls
        for first in range(0, len(self), per_chunk):
            last = min(first + per_chunk, len(self))
            rows = self._rank_samples(epoch, first * b, min(last * b, total)).tolist()
            for k in range(last - first):
                yield EpochBatch(rows[k * b : (k + 1) * b], epoch)
