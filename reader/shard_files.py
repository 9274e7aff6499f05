"""Shard files opened for reading: the one layer between every reader and a local shard.

A shard is read in place, memory-mapped (`io="mmap"`) or with `pread` (`io="pread"`, for
network file systems such as NFS, Lustre or sshfs, where a page fault on a map is a round trip
for a few pages and the readers issue their reads many at a time instead). `io="auto"` (every
reader's default) picks `pread` on a network or FUSE file system and `mmap` elsewhere
(`resolve_io`, `file_system`). Either way no lock is taken. One rule for every reader: a
missing shard is a `DatasetNotFoundError`, a shard shorter than the manifest records (an empty
one included) a `TruncatedFileError`, each naming the file.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path
from typing import Literal, Protocol

from fastpack.formats import (
    ChecksumMismatchError,
    DatasetFiles,
    DatasetNotFoundError,
    TruncatedFileError,
)
from fastpack.storage import is_url
from fastpack.storage.file_system import on_remote_file_system

IoMethod = Literal["mmap", "pread"]
IoChoice = Literal["auto", "mmap", "pread"]
IO_METHODS: tuple[IoMethod, ...] = ("mmap", "pread")
IO_CHOICES: tuple[IoChoice, ...] = ("auto", *IO_METHODS)
# The blocks `release_range` unmaps: a PMD's worth (2 MiB on x86-64 and arm64 with 4 KiB pages),
# the largest folio a read of a page-cache file maps at once, and a multiple of every page size
RELEASE_ALIGNMENT = 2 << 20


class ShardFile(Protocol):
    """One open shard."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, size: int) -> memoryview | bytes:
        """`size` bytes at `offset`; the range must be checked already."""
        ...

    def release(self) -> None:
        """Drop the pages read so far from this process's page tables (the page cache keeps
        them; views handed out stay valid)."""
        ...

    def release_range(self, offset: int, size: int) -> None:
        """`release` for the pages a read of `size` bytes at `offset` mapped only."""
        ...

    def close(self) -> None: ...


def check_io(io: str) -> IoChoice:
    """`io` as an `IoChoice`; a ValueError for any other value (the one rule every reader uses)."""
    if io not in IO_CHOICES:
        raise ValueError(f"io must be one of {IO_CHOICES}, got {io!r}")
    return io


def resolve_io(io: str, path: str | os.PathLike[str]) -> IoMethod:
    """The read method for shards under `path`: `io` itself, or for `"auto"` `pread` on a
    network or FUSE file system and `mmap` elsewhere."""
    choice = check_io(io)
    if choice != "auto":
        return choice
    return "pread" if on_remote_file_system(path) else "mmap"


def resolve_dataset_io(io: str, files: DatasetFiles) -> IoMethod:
    """`resolve_io` for the dataset `files`, judged where its shards lie: adopted shards
    (formats/SPEC.md section 10) may be on a mount the index is not on."""
    shards = files.shard_root
    return resolve_io(io, files.root if is_url(shards) else shards)


def _open(path: Path, expected_size: int, what: str) -> tuple[int, int]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError as e:
        raise DatasetNotFoundError(f"{path}: {what} not found") from e
    try:
        size = os.fstat(fd).st_size
    except OSError:
        os.close(fd)
        raise
    if size < expected_size or size == 0:
        os.close(fd)
        raise TruncatedFileError(
            f"{path}: {what} has {size} bytes, the manifest records {expected_size}"
        )
    if size != expected_size:  # a file rewritten since (an adopted shard: SPEC 10)
        os.close(fd)
        raise ChecksumMismatchError(
            f"{path}: {what} has {size} bytes, the manifest records {expected_size}: the file "
            "changed after the dataset was made; index or build it again"
        )
    return fd, size


class MappedShard:
    """A read-only map of the whole file; reads are zero-copy views."""

    def __init__(self, path: Path, expected_size: int, what: str) -> None:
        fd, self.size = _open(path, expected_size, what)
        try:
            self._map = mmap.mmap(fd, self.size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        self._view = memoryview(self._map)

    def read(self, offset: int, size: int) -> memoryview:
        return self._view[offset : offset + size]

    def release(self) -> None:
        self._map.madvise(mmap.MADV_DONTNEED)

    def release_range(self, offset: int, size: int) -> None:
        """Unmap the aligned `RELEASE_ALIGNMENT` blocks around `size` bytes at `offset`: every
        page a read of them can have mapped, the kernel's fault-around and large folios
        included, and few others. A pass over those blocks' page tables only, where `release`
        walks the whole file's."""
        start = offset // RELEASE_ALIGNMENT * RELEASE_ALIGNMENT
        end = min(-(-(offset + max(size, 1)) // RELEASE_ALIGNMENT) * RELEASE_ALIGNMENT, self.size)
        if end > start:
            self._map.madvise(mmap.MADV_DONTNEED, start, end - start)

    def close(self) -> None:
        """Unmap the file; a view handed out keeps the map alive until it is released."""
        self._view.release()
        with contextlib.suppress(BufferError):  # views still out: the map goes with the last
            self._map.close()


class PreadShard:
    """An open descriptor; each read is one `pread` call. Nothing is mapped."""

    def __init__(self, path: Path, expected_size: int, what: str) -> None:
        self._fd, self.size = _open(path, expected_size, what)
        self._path = path

    def read(self, offset: int, size: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        if len(data) != size:
            raise TruncatedFileError(
                f"{self._path}: {size} bytes at offset {offset} asked, {len(data)} read"
            )
        return data

    def advise_random(self) -> None:
        """Tell the kernel that reads come in random order: no readahead around each one
        (which on a network file system would fetch bytes nobody asked for)."""
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_RANDOM)

    def read_into(self, buffer: bytearray, offset: int, limit: int) -> int:
        """Read up to `limit` bytes at `offset` into `buffer` (as many as fit); the count read,
        0 at the end of the file or once the shard is closed."""
        fd = self._fd
        if fd < 0:
            return 0
        try:
            return os.preadv(fd, [memoryview(buffer)[: min(len(buffer), limit)]], offset)
        except OSError:
            return 0  # closed under a reader ahead: its data is no longer wanted

    def release(self) -> None:
        """Nothing is mapped."""

    def release_range(self, offset: int, size: int) -> None:
        """Nothing is mapped."""

    _fd = -1  # until opened: a constructor that raised leaves nothing to close

    def close(self) -> None:
        fd, self._fd = self._fd, -1  # forgotten first: a failed close must not close it again
        if fd >= 0:
            # A read-only descriptor is released even when close reports an error (a network
            # mount gone, ENOTCONN): nothing is lost, and the shards after it still close.
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()


def listed_in(shard: int, manifest: Path | str) -> str:
    """How errors name shard `shard` of the dataset whose manifest is `manifest`."""
    return f"shard {shard} listed in {manifest}"


def open_shard(path: Path, expected_size: int, io: IoMethod, what: str) -> ShardFile:
    """Open the shard at `path`, which the manifest records as `expected_size` bytes; `what`
    names it in errors (`listed_in(3, ".../fastpack.json")`)."""
    if io == "pread":
        return PreadShard(path, expected_size, what)
    return MappedShard(path, expected_size, what)
