"""`RangeReads`: the byte ranges of a batch read many at a time, and the next batch's read ahead.

On a network file system every read that misses the page cache waits a round trip, so one
`pread` after another leaves the link idle most of the time. A worker hands the reads of its
whole batch to a pool of threads at once (`pread` releases the GIL), sorted by shard and offset,
neighbours less than `JOIN_GAP` apart joined into one read; and it starts the reads of the batch
it will be given next before it decodes this one, so the link stays busy while it decodes.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

Request = tuple[int, int, int]  # (shard, offset, size)
ReadRange = Callable[[int, int, int], bytes]  # (shard, offset, size) -> exactly size bytes

THREADS = 16  # reads in flight per process: enough to cover a few ms of round trip
JOIN_GAP = 16 * 1024  # neighbours closer than this are read as one range (tar headers between)
JOIN_LIMIT = 8 * 2**20  # but no joined range grows past this


def joined(requests: Iterable[Request]) -> list[Request]:
    """`requests` sorted by shard and offset, each run of neighbours less than `JOIN_GAP`
    apart merged into one range of at most `JOIN_LIMIT` bytes (or one request, if larger)."""
    ranges: list[Request] = []
    for shard, offset, size in sorted(requests):
        if ranges:
            last_shard, start, length = ranges[-1]
            end = start + length
            if (
                last_shard == shard
                and offset - end <= JOIN_GAP
                and max(end, offset + size) - start <= JOIN_LIMIT
            ):
                ranges[-1] = (shard, start, max(end, offset + size) - start)
                continue
        ranges.append((shard, offset, size))
    return ranges


class RangeReads:
    """Byte ranges of shards read by a pool of `threads` threads through `read`; the pool is
    made on first use in each process (a forked worker makes its own)."""

    def __init__(self, read: ReadRange, threads: int = THREADS) -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self._read = read
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._pid = -1
        self._ahead: dict[Request, Future[bytes]] = {}
        self._starts: dict[int, list[int]] = {}  # per shard: the loaded ranges' starts, sorted
        self._loaded: dict[int, list[tuple[int, bytes]]] = {}  # per shard: (start, data)

    def _submit(self, request: Request) -> Future[bytes]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="fastpack-read")
            self._pid = os.getpid()
        return self._pool.submit(self._read, *request)

    def _forget_the_parents(self) -> None:
        """In a forked process: drop the parent's pool and the reads it had under way, whose
        futures would never complete here (their threads did not fork)."""
        if self._pool is not None and self._pid != os.getpid():
            self._pool, self._ahead = None, {}

    def load(self, requests: Iterable[Request], ahead: Iterable[Request] = ()) -> None:
        """Read `requests` (all at once) and keep them for `get` in place of the last batch's;
        start reading `ahead` (the next batch's) behind them without waiting for it. Ranges
        already read ahead are not read again. The first failed read raises its error."""
        self._forget_the_parents()
        ranges = joined(requests)
        futures = [self._ahead.pop(r) if r in self._ahead else self._submit(r) for r in ranges]
        self._ahead = {r: self._ahead.get(r) or self._submit(r) for r in joined(ahead)}
        self._starts, self._loaded = {}, {}
        for (shard, start, _), future in zip(ranges, futures, strict=True):
            self._loaded.setdefault(shard, []).append((start, future.result()))
        for shard, pieces in self._loaded.items():  # ranges are sorted: starts are too
            self._starts[shard] = [start for start, _ in pieces]

    def get(self, shard: int, offset: int, size: int) -> memoryview | None:
        """The `size` bytes at `offset` of `shard` if a loaded range holds them, else None."""
        starts = self._starts.get(shard)
        if not starts:
            return None
        k = bisect.bisect_right(starts, offset) - 1
        if k < 0:
            return None
        start, data = self._loaded[shard][k]
        if offset + size > start + len(data):
            return None
        return memoryview(data)[offset - start : offset - start + size]

    def clear(self) -> None:
        """Forget what was loaded and read ahead (reads in flight finish unseen)."""
        self._starts, self._loaded, self._ahead = {}, {}, {}
