"""`ShardReader`: the shards of one dataset, each opened on first use by the map-style reader."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from time import perf_counter_ns

from fastpack.formats import MANIFEST_NAME, DatasetFiles

from ..shard_files import IoMethod, PreadShard, ShardFile, listed_in, open_shard
from ..stats import block, recorder
from ..stats.counts import READ_COUNTS
from .range_reads import RangeReads, Request


class ShardReader:
    """Reads byte ranges of a dataset's shards, opening each shard once, on first use.

    With `io="mmap"` each shard is mapped and payloads are zero-copy views; the pages belong to
    the page cache, so forked workers share them. Pages a process has touched count towards its
    PSS until `release` drops them from its page tables (`MADV_DONTNEED`): without it, workers
    that read a whole epoch would report the whole dataset as theirs. With `io="pread"` each
    payload is one `pread` call on a descriptor kept open per shard, and `load` reads a batch's
    payloads many at a time, and the next batch's ahead (`RangeReads`), for `read` to serve.
    `close` closes them all.
    """

    def __init__(self, files: DatasetFiles, io: IoMethod) -> None:
        self._files = files
        self._io: IoMethod = io
        self._open: dict[int, ShardFile] = {}
        self._touched: set[int] = set()
        # A function of the dict, not a method of this reader: no cycle keeps a closed reader's
        # index map alive until the next garbage collection.
        read = functools.partial(_read_range, self._open)
        self._ranges = RangeReads(read) if io == "pread" else None

    def _shard(self, shard: int) -> ShardFile:
        opened = self._open.get(shard)
        if opened is None:
            what = listed_in(shard, self._files.root / MANIFEST_NAME)
            expected = self._files.manifest.shards[shard].bytes
            path = self._files.shard_path(shard)
            opened = self._open[shard] = open_shard(path, expected, self._io, what)
            if isinstance(opened, PreadShard):
                opened.advise_random()  # no readahead around each payload: only its bytes
        return opened

    def size(self, shard: int) -> int:
        """Byte size of shard `shard` (opening it if needed)."""
        return self._shard(shard).size

    def read(self, shard: int, offset: int, size: int) -> memoryview | bytes:
        """`size` bytes at `offset` of shard `shard`; the range must be checked already."""
        self._touched.add(shard)
        READ_COUNTS.bytes_read += size
        if self._ranges is not None:
            loaded = self._ranges.get(shard, offset, size)
            if loaded is not None:
                return loaded
        return self._shard(shard).read(offset, size)

    def load(self, requests: list[Request], ahead: Iterable[Request] = ()) -> None:
        """With `io="pread"`: read the byte ranges `requests` (`(shard, offset, size)`, checked
        already) all at once, for `read` to serve until the next `load`, and start reading
        `ahead` (checked too) behind them. With `io="mmap"`: nothing (the map reads in place)."""
        if self._ranges is None:
            return
        start = perf_counter_ns()
        ahead = list(ahead)
        for shard in {shard for shard, _, _ in (*requests, *ahead)}:
            self._shard(shard)  # opened here, not by two reading threads at once
        self._ranges.load(requests, ahead)
        recorder.current().timed(block.READ_NS, perf_counter_ns() - start)

    def release(self) -> None:
        """Unmap the pages read since the last call from this process."""
        for shard in self._touched:
            self._open[shard].release()
        self._touched.clear()

    def release_range(self, shard: int, offset: int, size: int) -> None:
        """Unmap the pages a read of `size` bytes at `offset` of shard `shard` mapped (and
        those around them: `ShardFile.release_range`), wherever the shard is among those read;
        `release` still unmaps the rest of what was read."""
        opened = self._open.get(shard)
        if opened is not None:
            opened.release_range(offset, size)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def close(self) -> None:
        """Close every shard opened so far; a later read opens it again."""
        for opened in self._open.values():
            opened.close()
        self._open.clear()
        self._touched.clear()
        if self._ranges is not None:
            self._ranges.clear()


def _read_range(opened: dict[int, ShardFile], shard: int, offset: int, size: int) -> bytes:
    """`size` bytes at `offset` of shard `shard`, opened already (by `ShardReader.load`)."""
    return bytes(opened[shard].read(offset, size))
