"""Reading byte ranges of one shard file: memory-mapped, or with `pread` (no map at all).

`pread` suits network file systems (NFS, Lustre) where page faults on a map are slow or
unreliable; both read the file in place, with no copy and no lock.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Literal, Protocol

from fastpack.formats import TruncatedFileError

IoMethod = Literal["mmap", "pread"]
IO_METHODS: tuple[IoMethod, ...] = ("mmap", "pread")


class ShardFile(Protocol):
    """One open shard."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, size: int) -> memoryview | bytes: ...

    def close(self) -> None: ...


def _open(path: Path, expected_size: int) -> tuple[int, int]:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    if size < expected_size:
        os.close(fd)
        raise TruncatedFileError(f"{path}: {size} bytes, the manifest records {expected_size}")
    return fd, size


class MappedShard:
    """A read-only map of the whole file; reads are zero-copy views."""

    def __init__(self, path: Path, expected_size: int) -> None:
        fd, self.size = _open(path, expected_size)
        try:
            self._map = mmap.mmap(fd, self.size, access=mmap.ACCESS_READ) if self.size else None
        finally:
            os.close(fd)
        self._view = memoryview(self._map) if self._map is not None else memoryview(b"")

    def read(self, offset: int, size: int) -> memoryview:
        return self._view[offset : offset + size]

    def close(self) -> None:
        self._view.release()
        if self._map is not None:
            self._map.close()


class PreadShard:
    """An open descriptor; each read is one `pread` call."""

    def __init__(self, path: Path, expected_size: int) -> None:
        self._fd, self.size = _open(path, expected_size)
        self._path = path

    def read(self, offset: int, size: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        if len(data) != size:
            raise TruncatedFileError(
                f"{self._path}: {size} bytes at offset {offset} asked, {len(data)} read"
            )
        return data

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def open_shard_file(path: Path, expected_size: int, io: IoMethod) -> ShardFile:
    if io == "pread":
        return PreadShard(path, expected_size)
    return MappedShard(path, expected_size)
