"""Datasets at URLs (`s3://bucket/prefix`, and `gs://`, `az://`, ... with their fsspec packages).

Endpoint and credentials come from fsspec's usual sources: the environment (`AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, ...), fsspec's configuration, or `storage_options`
(for s3fs e.g. `{"key": ..., "secret": ..., "client_kwargs": {"endpoint_url": ...}}`).
fsspec is imported on first use: install `fastpack[s3]`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import (
    MANIFEST_NAME,
    REJECTS_NAME,
    DatasetNotFoundError,
    Manifest,
    manifest_from_text,
    read_manifest,
)

from ._fetch import download
from ._retry import RetryPolicy, retry_call

DEFAULT_PART_BYTES = 32 * 2**20
# One filesystem per process and set of options, never freed before the process ends: an
# fsspec filesystem finalized early in a DataLoader worker closes its connections from the wrong
# event loop, and one inherited through fork must never be used (its loop did not fork).
_FILESYSTEMS: dict[tuple[int, str], tuple[Any, str]] = {}


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for `scheme://...` other than `file://`."""
    text = os.fspath(path)
    return "://" in text and not text.startswith("file://")


def _import_fsspec() -> Any:
    try:
        import fsspec  # noqa: PLC0415 - an optional dependency, imported on first use
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("datasets at URLs need fsspec: pip install 'fastpack[s3]'") from e
    return fsspec


def _filesystem(url: str, storage_options: Mapping[str, Any]) -> tuple[Any, str]:
    """`(filesystem, path)` for `url`; the filesystem is shared by this process's locations
    with the same scheme and options."""
    fsspec = _import_fsspec()
    protocol = url.split("://", 1)[0]
    key = (os.getpid(), f"{protocol} {sorted(storage_options.items())!r}")
    if key not in _FILESYSTEMS:
        options = {"skip_instance_cache": True, **storage_options}
        _FILESYSTEMS[key] = fsspec.core.url_to_fs(f"{protocol}://", **options)
    fs = _FILESYSTEMS[key][0]
    return fs, fs._strip_protocol(url).rstrip("/")


class RemoteLocation:
    """A dataset prefix at a URL and its fsspec filesystem, opened anew in each process."""

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None) -> None:
        if not is_url(url):
            raise ValueError(f"{url!r} is not a URL (scheme://bucket/prefix)")
        self.url = url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self._fs: Any = None
        self._root = ""
        self._pid = -1

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "storage_options": self.storage_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], state["storage_options"])  # type: ignore[misc]

    @property
    def fs(self) -> Any:
        """The fsspec filesystem of this process (a forked process makes its own)."""
        if self._fs is None or self._pid != os.getpid():
            self._fs, self._root = _filesystem(self.url, self.storage_options)
            self._pid = os.getpid()
        return self._fs

    def path(self, name: str) -> str:
        """The filesystem path of `name` (relative to the dataset)."""
        if self._fs is None or self._pid != os.getpid():
            _ = self.fs  # sets self._root
        return f"{self._root}/{name}"

    def url_of(self, name: str) -> str:
        return f"{self.url}/{name}"

    def read_bytes(self, name: str, retry: RetryPolicy) -> bytes:
        """The whole object `name`; a missing one raises `DatasetNotFoundError` at once."""
        try:
            data: bytes = retry_call(
                lambda: self.fs.cat_file(self.path(name)),
                self.url_of(name),
                retry,
                permanent=(FileNotFoundError, PermissionError),
            )
        except FileNotFoundError as e:
            raise DatasetNotFoundError(f"{self.url_of(name)}: not found ({e})") from e
        return data

    def download(
        self,
        name: str,
        dest: Path,
        *,
        size: int,
        sha256: str,
        retry: RetryPolicy,
        part_bytes: int = DEFAULT_PART_BYTES,
        threads: int = 4,
        tmp: Path | None = None,
    ) -> None:
        """Fetch `name` whole into `dest`, checked against `size` and `sha256`."""
        download(
            self.fs, self.path(name), dest, url=self.url_of(name), size=size, sha256=sha256,
            retry=retry, part_bytes=part_bytes, threads=threads, tmp=tmp,
        )  # fmt: skip


def read_remote_manifest(
    url: str, storage_options: Mapping[str, Any] | None = None, retry: RetryPolicy | None = None
) -> Manifest:
    """The manifest of the dataset at `url`; `DatasetNotFoundError` (naming the URL) for an
    unknown bucket or prefix, or a build that has not finished."""
    location = RemoteLocation(url, storage_options)
    text = read_manifest_bytes(location, retry or RetryPolicy())
    return manifest_from_text(text, location.url_of(MANIFEST_NAME))


def read_manifest_bytes(location: RemoteLocation, retry: RetryPolicy) -> bytes:
    """The manifest's bytes; `DatasetNotFoundError` when there is none."""
    try:
        return location.read_bytes(MANIFEST_NAME, retry)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(
            f"{location.url_of(MANIFEST_NAME)}: no manifest; not a fastpack dataset (or its "
            f"build has not finished): {e.__cause__}"
        ) from e


def read_manifest_at(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> Manifest:
    """The manifest of a dataset given as a local directory or a URL."""
    if is_url(path):
        return read_remote_manifest(os.fspath(path), storage_options)
    return read_manifest(Path(path) / MANIFEST_NAME)


def fetch_dataset(
    url: str,
    dest: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    retry: RetryPolicy | None = None,
    threads: int = 4,
) -> Path:
    """Copy the dataset at `url` into the directory `dest` (created; must be empty): index and
    shards checked against the manifest's SHA-256s, the manifest written last."""
    retry = retry or RetryPolicy()
    location = RemoteLocation(url, storage_options)
    text = read_manifest_bytes(location, retry)
    manifest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    files = [(manifest.index.name, manifest.index.bytes, manifest.index.sha256)]
    files += [(s.name, s.bytes, s.sha256) for s in manifest.shards]
    for name, size, sha256 in files:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        location.download(name, out / name, size=size, sha256=sha256, retry=retry,
                          threads=threads)  # fmt: skip
    for shard in manifest.shards:
        (out / shard.index_name).write_bytes(location.read_bytes(shard.index_name, retry))
    _copy_optional(location, REJECTS_NAME, out, retry)
    tmp = out / (MANIFEST_NAME + ".tmp")
    tmp.write_bytes(text)
    os.replace(tmp, out / MANIFEST_NAME)
    return out


def _copy_optional(location: RemoteLocation, name: str, out: Path, retry: RetryPolicy) -> None:
    try:
        data = location.read_bytes(name, retry)
    except DatasetNotFoundError:
        return
    (out / name).write_bytes(data)
