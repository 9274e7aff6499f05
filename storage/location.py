"""`Location`: a prefix at a URL, the one door through which fastpack reads and writes objects.

Every call goes through one `RetryPolicy`: transport errors are retried with backoff, a missing
object is not (it raises `FileNotFoundError`, or `DatasetNotFoundError` where a file of a
dataset was expected). The filesystem is opened anew in each process (see `urls.filesystem`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import DatasetNotFoundError

from .download import download
from .retry import RetryPolicy, retry_call
from .urls import filesystem, is_url

DEFAULT_PART_BYTES = 32 * 2**20
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
        return data

    def read_range(self, name: str, start: int, end: int) -> bytes:
        """Bytes `[start, end)` of object `name` (fewer at its end)."""
        data: bytes = self._call(
            f"{self.url_of(name)} [{start}, {end})",
            lambda: self.fs.cat_file(self.path(name), start=start, end=end),
            None,
        )
        return data

    def iter_chunks(self, name: str, size: int, chunk_bytes: int) -> Iterator[bytes]:
        """Object `name` as consecutive chunks of up to `chunk_bytes`, `size` bytes in all: one
        ranged, retried read each, so that memory stays bounded by one chunk."""
        for start in range(0, size, chunk_bytes):
            yield self.read_range(name, start, min(start + chunk_bytes, size))

    def size(self, name: str) -> int | None:
        """The size of object `name`, None if there is none."""
        try:
            info = self._call(self.url_of(name), lambda: self.fs.info(self.path(name)), None)
        except FileNotFoundError:
            return None
        return int(info["size"])

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
        *,
        size: int,
        sha256: str,
        retry: RetryPolicy | None = None,
        part_bytes: int = DEFAULT_PART_BYTES,
        threads: int = 4,
        tmp: Path | None = None,
    ) -> None:
        """Fetch `name` whole into `dest`, checked against `size` and `sha256`."""
        download(
            self.fs, self.path(name), dest, url=self.url_of(name), size=size, sha256=sha256,
            retry=retry or self.retry, part_bytes=part_bytes, threads=threads, tmp=tmp,
        )  # fmt: skip
