"""One shard read once, front to back: its bytes, size, SHA-256 and CRC-32C as they pass.

A local shard is read from its file; a remote one (`s3://`, `https://`, any fsspec URL) through
`fastpack.storage.Location`, range by range under its retry policy. Nothing is written to disk.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

import google_crc32c
from fastpack.storage import Location
from fastpack.storage.download import exact_range
from fastpack.storage.file_system import on_remote_file_system
from fastpack.storage.stream import ChunkStream

from ..errors import SourceError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from _typeshed import WriteableBuffer

READ_BYTES = 4 << 20  # what one read of the underlying file or object asks for
JOB_READS = 2  # ranges a shard's job has in flight: the next arrives while this one is checked
SURVEY_READS = 4  # ranges a survey has in flight: it runs alone, before the jobs start


@dataclass(frozen=True)
class ShardDigest:
    """What the manifest records of a shard's bytes (formats/SPEC.md section 2)."""

    bytes: int
    sha256: str
    crc32c: int


class HashingReader(io.RawIOBase):
    """Reads through `raw`, hashing every byte it returns; `position` counts them."""

    def __init__(self, raw: io.RawIOBase | io.BufferedIOBase | Any) -> None:
        super().__init__()
        self._raw = raw
        self._sha = hashlib.sha256()
        self._crc = 0
        self.position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        size = self._raw.readinto(view)  # no bytes object of a chunk's size made, nor copied
        if not size:
            return 0
        self._sha.update(view[:size])
        # google_crc32c takes read-only bytes only: a copy of the chunk, cheap beside the
        # SHA-256 of the same bytes
        self._crc = google_crc32c.extend(self._crc, bytes(view[:size]))
        self.position += size
        return size

    def digest(self) -> ShardDigest:
        return ShardDigest(self.position, self._sha.hexdigest(), self._crc)

    def close(self) -> None:
        self._raw.close()
        super().close()


def split_url(url: str) -> tuple[str, str]:
    """`(prefix, name)` of an object URL: `s3://bucket/a/b.tar` -> `s3://bucket/a`, `b.tar`."""
    prefix, _, name = url.rpartition("/")
    return prefix, name


def open_shard(
    url: str, storage_options: Mapping[str, Any] | None = None, chunk_bytes: int = READ_BYTES
) -> HashingReader:
    """The shard `url` (a local path or a URL) opened for one sequential read, hashed as it
    passes, `JOB_READS` ranges read at once (on a network file system or an object store a read
    waits for the network, which the next range's read then overlaps). SourceError naming it
    when there is no such file or object, or it cannot be opened."""
    return HashingReader(open_ranges(url, storage_options, chunk_bytes, JOB_READS))


def open_plain(
    url: str, storage_options: Mapping[str, Any] | None = None, chunk_bytes: int = READ_BYTES
) -> BinaryIO:
    """The shard `url` opened for reading without hashing (a survey of its first samples),
    `SURVEY_READS` ranges read at once."""
    raw = open_ranges(url, storage_options, chunk_bytes, SURVEY_READS)
    return io.BufferedReader(raw, READ_BYTES)


def _ahead(
    read: Callable[[int, int], bytes], size: int, chunk_bytes: int, depth: int
) -> Iterator[bytes]:
    """Bytes `[0, size)` in order, `chunk_bytes` a range, `depth` ranges read at once by as
    many threads (a network file system or an object store answers several requests in the
    time of one); those still in flight when the reader stops are waited for, no more."""
    pool = ThreadPoolExecutor(depth, thread_name_prefix="fastpack-shard-read")
    starts = iter(range(0, size, chunk_bytes))
    pending: deque[Future[bytes]] = deque()
    try:
        for start in starts:
            pending.append(pool.submit(read, start, min(start + chunk_bytes, size)))
            if len(pending) == depth:
                break
        while pending:
            data = pending.popleft().result()
            start = next(starts, -1)
            if start >= 0:
                pending.append(pool.submit(read, start, min(start + chunk_bytes, size)))
            yield data
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _file_ranges(path: str) -> tuple[Callable[[int, int], bytes], int, Callable[[], None]]:
    """`(read of a range, size, close)` of a local or mounted file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError as e:
        raise SourceError(f"{path}: not found") from e
    except OSError as e:
        raise SourceError(f"{path}: cannot open: {e.strerror or e}") from e

    def read(start: int, end: int) -> bytes:
        return os.pread(fd, end - start, start)

    return read, os.fstat(fd).st_size, lambda: os.close(fd)


def _object_ranges(
    url: str, storage_options: Mapping[str, Any] | None
) -> tuple[Callable[[int, int], bytes], int]:
    """`(read of a range, size)` of the object `url`; a range of another length (a server that
    ignores byte ranges) raises `IncompleteReadError`."""
    prefix, name = split_url(url)
    location = Location(prefix, storage_options)
    try:
        size = location.size(name)
    except OSError as e:
        raise SourceError(f"{url}: cannot open: {e.strerror or e}") from e
    if size is None:
        raise SourceError(f"{url}: not found")

    def read(start: int, end: int) -> bytes:
        return exact_range(url, start, end, location.read_range(name, start, end))

    return read, size


class _Ranges(ChunkStream):
    """A shard's bytes in order, read some ranges at once; closing it closes the file."""

    def __init__(self, chunks: Iterator[bytes], close: Callable[[], None]) -> None:
        super().__init__(chunks)
        self._close_file = close

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._close_file()


def _nothing() -> None:
    """What closing an object's ranges takes."""


def open_ranges(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    chunk_bytes: int = READ_BYTES,
    depth: int = JOB_READS,
) -> io.RawIOBase:
    """The bytes of the file or object `url`: a local file as it is, a file on a network file
    system or an object `chunk_bytes` a range, `depth` ranges at once."""
    if "://" not in url:
        if not on_remote_file_system(url):
            return _local_file(url)  # the kernel reads ahead of a local file by itself
        read, size, close = _file_ranges(url)
    else:
        read, size = _object_ranges(url, storage_options)
        close = _nothing
    return _Ranges(_ahead(read, size, chunk_bytes, depth), close)


def _local_file(path: str) -> io.FileIO:
    try:
        return io.FileIO(path, "rb")
    except FileNotFoundError as e:
        raise SourceError(f"{path}: not found") from e
    except OSError as e:
        raise SourceError(f"{path}: cannot open: {e.strerror or e}") from e
