"""Downloading one object whole: parallel ranged GETs written as they arrive, retries, a checksum
(CRC-32C or SHA-256) of the bytes while they are in memory, atomic rename."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from fastpack.formats import ChecksumMismatchError, DatasetNotFoundError
from fastpack.formats.checksum import crc32c_extend

from .counts import IO_COUNTS
from .object_reads import RangeChunks
from .retry import RetryPolicy, log, retry_call
from .transfer import Transfer


class IncompleteReadError(OSError):
    """A ranged GET returned fewer bytes than asked for (a cut connection, a shorter object)."""


def exact_range(url: str, start: int, end: int, data: bytes) -> bytes:
    """`data`, read as bytes `[start, end)` of `url`; a read of another length (a server that
    ignores byte ranges) raises `IncompleteReadError`."""
    if len(data) != end - start:
        raise IncompleteReadError(
            f"{url}: bytes [{start}, {end}) came back as {len(data)} bytes (does the server "
            "answer byte ranges?)"
        )
    return data


def temp_name(dest: Path) -> Path:
    """A name beside `dest` private to this process and thread; `.part` marks it unfinished."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.part")


def final_name(part_name: str) -> str:
    """The name a `temp_name` file takes once complete (`.a.tar.12.34.part` -> `a.tar`)."""
    return part_name[1:].rsplit(".", 3)[0]


def byte_ranges(size: int, part_bytes: int) -> list[tuple[int, int]]:
    """`[start, stop)` of each part of `part_bytes` (the last may be shorter) of `size` bytes."""
    return [(start, min(start + part_bytes, size)) for start in range(0, size, part_bytes)]


@dataclass(frozen=True, kw_only=True)
class Expected:
    """What a downloaded object must be: `size` bytes, with the CRC-32C `crc32c` where one is
    recorded (a fifth of SHA-256's CPU: 0.14 against 0.71 ms per MiB,
    benchmarks/streaming/STREAMING.md), else the SHA-256 `sha256` (hex)."""

    size: int
    sha256: str
    crc32c: int | None = None


@dataclass(frozen=True)
class RemoteObject:
    """The object at `path` as `reads` names it; `url` names it in messages."""

    reads: RangeChunks
    path: str
    url: str


@dataclass(frozen=True)
class _Target:
    """One object being fetched into the open file `fd`."""

    source: RemoteObject
    fd: int


class Crc32c:
    """CRC-32C (Castagnoli) with hashlib's `update` and `hexdigest` (8 hex digits)."""

    def __init__(self) -> None:
        self.value = 0

    def update(self, data: memoryview) -> None:
        self.value = crc32c_extend(self.value, data)

    def hexdigest(self) -> str:
        return f"{self.value:08x}"


class _Hash(Protocol):
    def update(self, data: memoryview, /) -> None: ...

    def hexdigest(self) -> str: ...


class InOrderDigest:
    """A digest (SHA-256 by default) of an object whose ranges arrive in any order, from the
    buffers they arrive in (no second read of the file). A buffer that starts at or before the
    first byte not hashed yet is hashed at once (what is already hashed is skipped: a retried
    range sends its start again) and then dropped; one further on waits in memory until the
    bytes before it are in. With the object in one range, every buffer is hashed as it
    arrives."""

    def __init__(self, make: Callable[[], _Hash] = hashlib.sha256) -> None:
        self._hash = make()
        self._next = 0
        self._waiting: dict[int, memoryview] = {}
        self._lock = threading.Lock()

    def add(self, offset: int, buffer: memoryview) -> None:
        """The bytes of the object at `[offset, offset + len(buffer))`."""
        with self._lock:
            if offset > self._next:
                held = self._waiting.get(offset)
                if held is None or len(held) < len(buffer):  # a retry may cut it shorter
                    self._waiting[offset] = buffer
                return
            self._take(offset, buffer)
            while self._waiting:
                first = min(self._waiting)
                if first > self._next:
                    break
                self._take(first, self._waiting.pop(first))

    def _take(self, offset: int, buffer: memoryview) -> None:
        skip = self._next - offset
        if skip < len(buffer):
            self._hash.update(buffer[skip:])
            self._next = offset + len(buffer)

    def hexdigest(self, size: int) -> str:
        """The digest of the first `size` bytes; a gap before them is an error of the caller."""
        if self._next != size:
            raise AssertionError(f"hashed {self._next} of {size} bytes")
        return self._hash.hexdigest()


def _fetch_range(target: _Target, start: int, end: int, digest: InOrderDigest) -> None:
    """Bytes `[start, end)` written at their offset and handed to `digest` as they arrive."""
    offset = start
    for buffer in target.source.reads.chunks(target.source.path, start, end):
        os.pwrite(target.fd, buffer, offset)
        IO_COUNTS.fetched(len(buffer))
        digest.add(offset, buffer)
        offset += len(buffer)
    if offset != end:
        raise IncompleteReadError(
            f"{target.source.url}: bytes [{start}, {end}) came back as {offset - start} bytes"
        )


def _fetch_into(
    target: _Target, size: int, make: Callable[[], _Hash], transfer: Transfer, retry: RetryPolicy
) -> str:
    """Every range of the object into its file, each range retried on its own; the digest
    (`make`'s) of the bytes written."""
    digest = InOrderDigest(make)

    def fetch(span: tuple[int, int]) -> None:
        retry_call(
            lambda: _fetch_range(target, *span, digest),
            target.source.url,
            retry,
            permanent=(FileNotFoundError, PermissionError),
        )

    spans = byte_ranges(size, transfer.part_bytes)
    if len(spans) <= 1 or transfer.threads <= 1:
        for span in spans:
            fetch(span)
    else:
        with ThreadPoolExecutor(min(transfer.threads, len(spans))) as pool:
            for _ in pool.map(fetch, spans):
                pass
    return digest.hexdigest(size)


def download(
    source: RemoteObject,
    dest: Path,
    expected: Expected,
    transfer: Transfer | None = None,
    tmp: Path | None = None,
) -> None:
    """Fetch `source` into `dest`, which appears only once it is `expected`'s size and checksum.

    Transport failures and short reads are retried per range (then `FetchError`); a checksum
    mismatch downloads the whole object again, up to `retry.attempts` times in all (then
    `ChecksumMismatchError` naming the URL and both checksums). `tmp` is the unfinished file
    (by default a private name beside `dest`); it has its full size from the start.
    (`transfer.bulk` was the caller's to act on, in choosing `source.reads`.)"""
    tmp = tmp or temp_name(dest)
    transfer = transfer or Transfer()
    retry = transfer.retry or RetryPolicy()
    url, size = source.url, expected.size
    kind, want, make = (
        ("sha256", expected.sha256, hashlib.sha256)
        if expected.crc32c is None
        else ("crc32c", f"{expected.crc32c:08x}", Crc32c)
    )
    found = ""
    try:
        for attempt in range(retry.attempts):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, size)
                found = _fetch_into(_Target(source, fd), size, make, transfer, retry)
            except FileNotFoundError as e:
                raise DatasetNotFoundError(f"{url}: not found ({e})") from e
            finally:
                os.close(fd)
            if found == want:
                os.replace(tmp, dest)
                return
            if attempt + 1 < retry.attempts:
                IO_COUNTS.retried()
                log.warning("%s: %s %s, expected %s; downloading again", url, kind, found, want)
                time.sleep(retry.wait(attempt))
    finally:
        tmp.unlink(missing_ok=True)
    raise ChecksumMismatchError(
        f"{url}: {kind} of its {size} bytes is {found}, the manifest records {want} "
        f"({retry.attempts} downloads)"
    )
