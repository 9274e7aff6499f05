"""Batches of sample indices for a DataLoader, each carrying the epoch it belongs to (torch-free).

A DataLoader calls `Dataset.__getitems__` with each batch this sampler yields; the batch's
`epoch` reaches the workers with it, so random transforms follow `set_epoch` even in persistent
workers, which keep the dataset copy they started with.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np


class EpochBatch(list[int]):
    """A list of sample indices tagged with an epoch."""

    def __init__(self, indices: Iterable[int], epoch: int) -> None:
        super().__init__(indices)
        self.epoch = epoch

    def __reduce__(self) -> tuple[type[EpochBatch], tuple[list[int], int]]:
        return EpochBatch, (list(self), self.epoch)


class EpochSource(Protocol):
    """What the sampler reads from the dataset: its length and current epoch."""

    epoch: int

    def __len__(self) -> int: ...


class EpochBatchSampler:
    """Batches over `range(len(dataset))`, shuffled by `(seed, dataset.epoch)` when `shuffle`.

    The order is a function of the seed and the epoch only (call `dataset.set_epoch` before each
    epoch, as with `DistributedSampler`), so an interrupted run can replay it.
    """

    def __init__(
        self,
        dataset: EpochSource,
        batch_size: int,
        *,
        shuffle: bool = True,
        drop_last: bool = False,
        seed: int = 0,
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

    def __len__(self) -> int:
        n, b = len(self.dataset), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def order(self, epoch: int) -> np.ndarray[tuple[int], np.dtype[np.int64]]:
        """The sample order of `epoch`."""
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        return np.random.default_rng((self.seed, epoch)).permutation(n)

    def __iter__(self) -> Iterator[EpochBatch]:
        epoch = self.dataset.epoch
        order = self.order(epoch)
        for batch in range(len(self)):
            rows = order[batch * self.batch_size : (batch + 1) * self.batch_size]
            yield EpochBatch(rows.tolist(), epoch)
