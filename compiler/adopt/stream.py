"""One shard read once, front to back: its bytes, size, SHA-256 and CRC-32C as they pass.

A local shard is read from its file; a remote one (`s3://`, `https://`, any fsspec URL) through
`fastpack.storage.Location`, range by range under its retry policy. Nothing is written to disk.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import google_crc32c
from fastpack.storage import Location
from fastpack.storage.stream import ChunkStream

from ..errors import SourceError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from _typeshed import WriteableBuffer

READ_BYTES = 4 << 20  # what one read of the underlying file or object asks for


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
        # google_crc32c takes read-only bytes only: its C loop over a copy costs a tenth of
        # SHA-256's
        self._crc = google_crc32c.extend(self._crc, bytes(view[:size]))
        self.position += size
        return size

    def drain(self) -> None:
        """Read (and hash) whatever is left."""
        while self.read(READ_BYTES):
            pass

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
    passes. SourceError naming it when there is no such file or object, or it cannot be opened."""
    return HashingReader(_raw(url, storage_options, chunk_bytes))


def _raw(
    url: str, storage_options: Mapping[str, Any] | None, chunk_bytes: int
) -> io.FileIO | io.BufferedReader:
    """A local file unbuffered, or an object read `chunk_bytes` at a time."""
    try:
        if "://" not in url:
            return Path(url).open("rb", buffering=0)
        prefix, name = split_url(url)
        location = Location(prefix, storage_options)
        size = location.size(name)
    except FileNotFoundError as e:
        raise SourceError(f"{url}: not found") from e
    except OSError as e:
        raise SourceError(f"{url}: cannot open: {e.strerror or e}") from e
    if size is None:
        raise SourceError(f"{url}: not found")
    return io.BufferedReader(ChunkStream(location.iter_chunks(name, size, chunk_bytes)))


def open_plain(
    url: str, storage_options: Mapping[str, Any] | None = None, chunk_bytes: int = READ_BYTES
) -> BinaryIO:
    """The shard `url` opened for reading without hashing (a survey of its first samples)."""
    raw = _raw(url, storage_options, chunk_bytes)
    return raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw, READ_BYTES)
