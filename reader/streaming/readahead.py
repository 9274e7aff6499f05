"""`ReadAhead`: the chunks a stream is about to read, read whole and in order into the page
cache by background threads, on a network file system.

A stream reads the samples of a window of shards in a shuffled order: on a network file system
each of those reads that misses the page cache waits a round trip. A few sequential readers of
large blocks, on the other hand, get what the link can deliver. So the chunks of the current
window and the next are read in order, `BLOCK_BYTES` at a time, through the very descriptor the
stream reads them with (sshfs and other FUSE file systems drop a file's cached pages when it is
opened again), into one scratch buffer per thread; the stream's own reads then find their pages
cached. Nothing of this is kept in the process: the page cache holds it, and gives it back
under memory pressure (a read of an evicted page goes to the server, as it would have).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from fastpack.formats import ABSENT, Index

from ..shard_files import PreadShard, ShardFile
from .plan import Chunk

BLOCK_BYTES = 4 * 2**20


def chunk_spans(index: Index, chunks: Sequence[Chunk]) -> list[tuple[int, int]]:
    """The bytes of each chunk's samples in its shard, `[start, stop)`: from its first sample's
    first member to its last sample's last (the header before the first member is left out:
    what is read ahead is a hint)."""
    spans = []
    for chunk in chunks:
        ends = [chunk.start, chunk.stop - 1]
        starts, stops = [], []
        for field in index.fields:
            offsets, sizes = index.offsets(field)[ends], index.sizes(field)[ends]
            if offsets[0] != np.uint64(ABSENT):
                starts.append(int(offsets[0]))
            if offsets[1] != np.uint64(ABSENT):
                stops.append(int(offsets[1]) + int(sizes[1]))
        spans.append((min(starts, default=0), max(stops, default=0)))
    return spans


class ReadAhead:
    """Reads byte ranges `spans[position]` of a stream's chunks ahead, `threads` at once;
    `depth` is how many positions from the one being opened are read ahead."""

    def __init__(self, spans: Sequence[tuple[int, int]], *, depth: int, threads: int) -> None:
        self.spans, self.depth = spans, max(1, depth)
        self._pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="fastpack-ahead")
        self._started: dict[int, Future[None]] = {}
        self._cancelled: set[int] = set()
        self._local = threading.local()
        self._lock = threading.Lock()

    def start(self, position: int, file: ShardFile) -> None:
        """Read chunk `position` of `file` ahead, unless it is started already (only shards
        read with `pread` are: a map reads through the page cache already)."""
        if position in self._started or not isinstance(file, PreadShard):
            return
        start, stop = self.spans[position]
        self._started[position] = self._pool.submit(self._read, position, file, start, stop)

    def _read(self, position: int, file: PreadShard, start: int, stop: int) -> None:
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:
            buffer = self._local.buffer = bytearray(BLOCK_BYTES)
        offset = start
        while offset < stop:
            with self._lock:
                if position in self._cancelled:
                    return
            n = file.read_into(buffer, offset, stop - offset)
            if n <= 0:
                return  # the shard ends early: the stream's own read names the error
            offset += n

    def cancel(self, position: int) -> None:
        """Stop reading chunk `position` ahead (it is being closed)."""
        with self._lock:
            self._cancelled.add(position)
        future = self._started.get(position)
        if future is not None:
            future.cancel()

    def close(self) -> None:
        with self._lock:
            self._cancelled.update(self._started)
        self._pool.shutdown(wait=False, cancel_futures=True)
