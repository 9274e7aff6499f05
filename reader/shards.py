"""How payload bytes come out of shard files: one small strategy class per I/O method."""

from __future__ import annotations

import mmap
import os
from typing import Protocol

from fastpack.formats import DatasetFiles, DatasetNotFoundError, TruncatedFileError


class ShardReader(Protocol):
    """Reads byte ranges of a dataset's shards, opening each shard on first use."""

    def size(self, shard: int) -> int:
        """Byte size of shard `shard` (opening it if needed)."""
        ...

    def read(self, shard: int, offset: int, size: int) -> memoryview | bytes:
        """`size` bytes at `offset` of shard `shard`; the range must be checked already."""
        ...

    def release(self) -> None:
        """Unmap the pages read since the last call from this process (the page cache keeps
        them; a later read maps them again). Earlier views stay valid."""
        ...


def open_shard_fd(files: DatasetFiles, shard: int) -> tuple[int, int]:
    """Open shard `shard` read-only: `(fd, size)`, with a named error if it is missing or shorter
    than the manifest says."""
    path = files.shard_path(shard)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError as e:
        raise DatasetNotFoundError(
            f"{path}: shard {shard} listed in {files.root / 'fastpack.json'} not found"
        ) from e
    size = os.fstat(fd).st_size
    expected = files.manifest.shards[shard].bytes
    if size < expected or size == 0:
        os.close(fd)
        raise TruncatedFileError(
            f"{path}: shard {shard} has {size} bytes, the manifest records {expected}"
        )
    return fd, size


class MmapShardReader:
    """Maps each shard read-only on first use and hands out zero-copy views of it.

    One map per opened shard lives in a dict keyed by shard number (shards, not samples); the
    pages belong to the page cache, so forked workers share them. Pages a process has touched
    count towards its PSS until `release` drops them from its page tables (`MADV_DONTNEED`):
    without it, workers that read a whole epoch would report the whole dataset as theirs.
    """

    def __init__(self, files: DatasetFiles) -> None:
        self._files = files
        self._maps: dict[int, mmap.mmap] = {}
        self._views: dict[int, memoryview] = {}
        self._touched: set[int] = set()

    def _view(self, shard: int) -> memoryview:
        view = self._views.get(shard)
        if view is None:
            fd, size = open_shard_fd(self._files, shard)
            try:
                mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
            self._maps[shard] = mapped
            view = self._views[shard] = memoryview(mapped)
        return view

    def size(self, shard: int) -> int:
        return len(self._view(shard))

    def read(self, shard: int, offset: int, size: int) -> memoryview:
        self._touched.add(shard)
        return self._view(shard)[offset : offset + size]

    def release(self) -> None:
        for shard in self._touched:
            self._maps[shard].madvise(mmap.MADV_DONTNEED)
        self._touched.clear()


class PreadShardReader:
    """The `ShardReader` strategy with `pread` instead of a map: one open
    descriptor per shard, one system call per payload, nothing mapped."""

    def __init__(self, files: DatasetFiles) -> None:
        self._files = files
        self._fds: dict[int, tuple[int, int]] = {}

    def _fd(self, shard: int) -> tuple[int, int]:
        opened = self._fds.get(shard)
        if opened is None:
            opened = self._fds[shard] = open_shard_fd(self._files, shard)
        return opened

    def size(self, shard: int) -> int:
        return self._fd(shard)[1]

    def read(self, shard: int, offset: int, size: int) -> bytes:
        fd, _ = self._fd(shard)
        data = os.pread(fd, size, offset)
        if len(data) != size:
            raise TruncatedFileError(
                f"{self._files.shard_path(shard)}: {size} bytes at offset {offset} asked, "
                f"{len(data)} read"
            )
        return data

    def release(self) -> None:
        """Nothing is mapped."""

    def close(self) -> None:
        for fd, _ in self._fds.values():
            os.close(fd)
        self._fds.clear()
