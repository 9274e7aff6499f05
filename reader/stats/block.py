"""The loader's counters in shared memory: one row of int64 per worker, made in the trainer
before the workers start (as the batch slots are), that each worker adds to without a lock
(it writes its own row only; an aligned int64 is never read half-written) and the trainer
reads whole. Times are in nanoseconds."""

from __future__ import annotations

import ctypes
import multiprocessing
from typing import Any

import numpy as np
import numpy.typing as npt

# The columns of a row.
BATCHES = 0
SAMPLES = 1
BUSY_NS = 2  # making batches, start to end (the rest of the time the worker waits for work)
READ_NS = 3  # waiting for shard bytes: pread of the batch's members, a shard's download or open
ALLOCATE_NS = 4  # taking the batch's shared memory: a free slot, else a fresh block
FRESH_BLOCKS = 5  # batches that found none of the worker's slots free
BYTES_READ = 6  # bytes of the members decoded
BYTES_FETCHED = 7  # bytes downloaded (or copied from a mounted file system)
CACHE_HITS = 8  # shards found in the node's shard cache
RETRIES = 9  # calls to the object store tried again
WIDTH = 10

Rows = npt.NDArray[np.int64]


class CounterBlock:
    """`rows` rows of counters (one per worker; one for loading in the trainer's process), in
    shared memory that forked workers inherit and spawned ones receive with their init."""

    def __init__(self, rows: int) -> None:
        if rows < 1:
            raise ValueError(f"a counter block needs at least one row, got {rows}")
        self.rows = rows
        self.values: Any = multiprocessing.RawArray(ctypes.c_int64, rows * WIDTH)

    def snapshot(self) -> Rows:
        """A copy of every row, `(rows, WIDTH)`."""
        rows: Rows = np.frombuffer(self.values, dtype=np.int64).reshape(self.rows, WIDTH).copy()
        return rows
