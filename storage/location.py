"""`Location`: a prefix at a URL, the one door through which fastpack reads and writes objects.

Every call goes through one `RetryPolicy`: transport errors are retried with backoff, a missing
object is not (it raises `FileNotFoundError`, or `DatasetNotFoundError` where a file of a
dataset was expected); a listing is retried page by page. The filesystem is opened anew in each
process (see `urls.filesystem`).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from fastpack.formats import DatasetNotFoundError

from . import listing
from .counts import IO_COUNTS
from .download import Expected, RemoteObject, download, exact_range
from .object_reads import (
    FsspecReads,
    ObstoreS3Reads,
    RangeChunks,
    native_allowed,
    obstore_fits,
)
from .retry import RetryPolicy, retry_call
from .stream import ChunkStream
from .transfer import Transfer
from .urls import S3_PROTOCOLS, filesystem, is_url

T = TypeVar("T")
DEFAULT_CHUNK_BYTES = 8 * 2**20
_PERMANENT = (FileNotFoundError, PermissionError)


class Location:
    """A URL prefix and its fsspec filesystem; names are relative to the prefix."""

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not is_url(url):
            raise ValueError(f"{url!r} is not a URL (scheme://bucket/prefix)")
        self.url = url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self.retry = retry or RetryPolicy()
        self._fs: Any = None
        self._root = ""
        self._pid = -1

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "storage_options": self.storage_options, "retry": self.retry}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], state["storage_options"], state["retry"])  # type: ignore[misc]

    @property
    def fs(self) -> Any:
        """The fsspec filesystem of this process (a forked process makes its own)."""
        if self._fs is None or self._pid != os.getpid():
            self._fs, self._root = filesystem(self.url, self.storage_options)
            self._pid = os.getpid()
        return self._fs

    def bulk_reads(self) -> RangeChunks:
        """The client of whole downloads: on S3 obstore (about half of s3fs's CPU per byte:
        0.86 against 1.84 ms per MiB, benchmarks/streaming/STREAMING.md) where the options
        allow and this process may use it (`object_reads.native_allowed`); otherwise the fsspec
        filesystem."""
        if self._on_s3() and obstore_fits(self.storage_options) and native_allowed():
            return ObstoreS3Reads.of_process(self.storage_options)
        return FsspecReads(self.fs)

    def path(self, name: str) -> str:
        """The filesystem path of `name`."""
        _ = self.fs  # sets self._root in this process
        return f"{self._root}/{name}"

    def url_of(self, name: str) -> str:
        return f"{self.url}/{name}"

    def _call(self, what: str, call: Any, retry: RetryPolicy | None) -> Any:
        return retry_call(call, what, retry or self.retry, permanent=_PERMANENT)

    def read_bytes(self, name: str, retry: RetryPolicy | None = None) -> bytes:
        """The whole object `name`; a missing one raises `DatasetNotFoundError` at once."""
        try:
            data: bytes = self._call(
                self.url_of(name), lambda: self.fs.cat_file(self.path(name)), retry
            )
        except FileNotFoundError as e:
            raise DatasetNotFoundError(f"{self.url_of(name)}: not found ({e})") from e
        IO_COUNTS.fetched(len(data))
        return data

    def read_range(self, name: str, start: int, end: int) -> bytes:
        """Bytes `[start, end)` of object `name` (fewer at its end)."""
        data: bytes = self._call(
            f"{self.url_of(name)} [{start}, {end})",
            lambda: self.fs.cat_file(self.path(name), start=start, end=end),
            None,
        )
        IO_COUNTS.fetched(len(data))
        return data

    def iter_chunks(self, name: str, size: int, chunk_bytes: int) -> Iterator[bytes]:
        """Object `name` as consecutive chunks of up to `chunk_bytes`, `size` bytes in all: one
        ranged, retried read each, so that memory stays bounded by one chunk. A chunk of another
        length (a server that ignores byte ranges) raises `IncompleteReadError`."""
        for start in range(0, size, chunk_bytes):
            end = min(start + chunk_bytes, size)
            yield exact_range(self.url_of(name), start, end, self.read_range(name, start, end))

    def size(self, name: str) -> int | None:
        """The size of object `name`, None if there is none."""
        try:
            info = self._call(self.url_of(name), lambda: self.fs.info(self.path(name)), None)
        except FileNotFoundError:
            return None
        return int(info["size"])

    def open_stream(self, name: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> io.BufferedReader:
        """Object `name` as a binary file read front to back, one retried ranged read of
        `chunk_bytes` at a time; `DatasetNotFoundError` if there is none."""
        size = self.size(name)
        if size is None:
            raise DatasetNotFoundError(f"{self.url_of(name)}: not found")
        return io.BufferedReader(ChunkStream(self.iter_chunks(name, size, chunk_bytes)))

    def walk(
        self, prefix: str = "", *, start_after: str = "", page_size: int | None = None
    ) -> Iterator[tuple[str, int]]:
        """`(name, size)` of every object under the folder `prefix` (`""`: the whole
        location), names relative to the location, in the store's listing order (S3: key
        order), after the name `start_after`. On S3 page by page, `page_size` keys a request
        (default `listing.PAGE_SIZE`), so that memory holds one page; folder markers (keys
        ending in `/`) are left out. A missing bucket raises `FileNotFoundError`."""
        folder = self._folder(prefix)
        if not self._on_s3():
            top = len(self.path(""))
            for path, size in listing.fsspec_objects(
                self.fs, self.path(folder).rstrip("/"), self._retried
            ):
                name = path[top:]
                if name.startswith(folder) and name > start_after:
                    yield name, size
            return
        key = self.fs.split_path(self.path(""))[1]  # the location's own key: "" or ending in /
        objects = listing.s3_objects(
            self.fs,
            self.path(folder),
            self._retried,
            start_after=f"{key}{start_after}" if start_after else "",
            page_size=page_size or listing.PAGE_SIZE,
        )
        for found, size in objects:
            yield found[len(key) :], size

    def folders(self, prefix: str = "") -> Iterator[str]:
        """The names of the folders directly under the folder `prefix` (`""`: the location's
        top), without the prefix or a trailing `/`: on S3 the common prefixes of a paged
        listing with the `/` delimiter, in listing order; elsewhere sorted."""
        folder = self._folder(prefix)
        if self._on_s3():
            skip = len(self.fs.split_path(self.path(folder))[1])
            for key in listing.s3_folders(self.fs, self.path(folder), self._retried):
                yield key[skip:].rstrip("/")
            return
        top = self.path(folder).rstrip("/")
        for path in listing.fsspec_folders(self.fs, top, self._retried):
            yield path[len(top) + 1 :]

    def has_objects(self, prefix: str = "") -> bool:
        """Whether any object lies under the folder `prefix` (one request of one key on S3)."""
        return next(self.walk(prefix, page_size=1), None) is not None

    def remove(self, name: str) -> None:
        """Delete object `name`; one that is not there is no error."""
        path = self.path(name)
        self._call(f"removal of {self.url_of(name)}", lambda: _remove(self.fs, path), None)

    def _folder(self, prefix: str) -> str:
        return prefix if not prefix or prefix.endswith("/") else f"{prefix}/"

    def _on_s3(self) -> bool:
        return self.url.split("://", 1)[0] in S3_PROTOCOLS

    def _retried(self, what: str, call: Callable[[], T]) -> T:
        result: T = self._call(what, call, None)
        return result

    def upload(self, local: Path, name: str) -> None:
        """Put the file `local` at `name` (an object store shows it whole or not at all)."""
        self._call(
            f"upload of {local} to {self.url_of(name)}",
            lambda: self.fs.put_file(str(local), self.path(name)),
            None,
        )

    def download(
        self,
        name: str,
        dest: Path,
        expected: Expected,
        transfer: Transfer | None = None,
        *,
        tmp: Path | None = None,
    ) -> None:
        """Fetch `name` whole into `dest`, checked against `expected` (see `download.download`),
        with the location's retry policy unless `transfer` names one."""
        transfer = transfer or Transfer()
        reads = self.bulk_reads() if transfer.bulk else FsspecReads(self.fs)
        source = RemoteObject(reads, self.path(name), self.url_of(name))
        download(source, dest, expected, replace(transfer, retry=transfer.retry or self.retry), tmp)


def _remove(fs: Any, path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(path)
