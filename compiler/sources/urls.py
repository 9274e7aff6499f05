"""URLs and member names shared by the sources: expanding a webdataset or TFRecord source into
its shards, opening a remote shard, and whether a member extension can name a field
(`name_problem`).

Expansion is `webdataset.shardlists.expand_urls`, what `webdataset.WebDataset` does with a string:
`::` separates URLs, `${NAME}` takes `$WDS_NAME`, and braces expand (`shards-{000000..000099}.tar`,
`{a,b}`). A shard is a local path (or `file:` URL), a `pipe:` command, or a remote URL. A `pipe:`
command runs through `webdataset.gopen.gopen` (the user's own command). Every `scheme://` URL
(`s3://`, `http(s)://`, `gs://`, `az://`, ...) is read through `fastpack.storage`, range by range
under its one retry policy; none shells out to a system tool (webdataset's own handlers use curl
and gsutil). A scheme whose fsspec package is missing is refused at once, naming the package.
webdataset is imported on first use: it imports torch when installed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlparse

from fastpack.formats import FieldSpec, ManifestError
from fastpack.formats.schema import ZSTD_SUFFIX, type_of_extension
from fastpack.storage import Location, MissingDependencyError

from ..errors import SourceError

Read = Callable[[int], bytes]
# Where a build copies the remote shards of a source, in its build directory.
COPIES_DIR = "sources"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_PATTERN_MARKS = ("{", "::", "${")
_CHUNK_BYTES = 8 << 20
_EXIT_WAIT_S = 10.0


def scheme(url: str) -> str:
    """`pipe`, `file`, `s3`, `http`, ...; `""` for a local path."""
    if url.startswith(("pipe:", "file:")):
        return url[:4]
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else ""


def is_local(url: str) -> bool:
    return scheme(url) in ("", "file")


def local_path(url: str) -> str:
    """The file a local shard names (a path, or a `file:` URL)."""
    return unquote(urlparse(url).path) if scheme(url) == "file" else url


def is_wds_url(source: str) -> bool:
    """A `pipe:` command, a `scheme://` URL, or a pattern (`{..}`, `::`, `${..}`) that is not an
    existing path as written: what only a webdataset source can be."""
    if scheme(source):
        return True
    return any(mark in source for mark in _PATTERN_MARKS) and not os.path.lexists(source)


def expand(source: str) -> list[str]:
    """The shards `source` names, in webdataset's order; SourceError if it names none."""
    from webdataset.shardlists import expand_urls  # noqa: PLC0415 -- on use: webdataset imports torch

    try:
        urls = [url for url in expand_urls(source) if url]
    except AssertionError as e:  # a ${NAME} without $WDS_NAME
        raise SourceError(f"{source}: cannot expand: {e}") from e
    if not urls:
        raise SourceError(f"{source}: names no shard")
    return urls


def shard_name(url: str) -> str:
    """A remote shard's name in sample sources: the base name of its URL, or for a `pipe:`
    command that of its last word ending in `.tar` (else the whole command)."""
    if scheme(url) == "pipe":
        words = [w for w in url[5:].split() if urlparse(w).path.lower().endswith(".tar")]
        return shard_name(words[-1]) if words else url
    path = urlparse(url).path if scheme(url) else url
    return path.rstrip("/").rpartition("/")[2] or url


def names_tars(url: str) -> bool:
    """Whether the shard URL's path ends in `.tar` (always true of a `pipe:` command)."""
    return scheme(url) == "pipe" or urlparse(url).path.lower().endswith(".tar")


def _exit_error(url: str, status: int) -> SourceError:
    ended = f"exited with status {status}" if status > 0 else f"was killed by signal {-status}"
    return SourceError(f"{url}: the command {ended}")


def _close_pipe(url: str, pipe: Any, failure: BaseException | None) -> None:
    """Close a webdataset `Pipe` and wait for its command; SourceError if the command failed.

    After a failure of the reader (a bad tar, say) the command's own failure is reported, unless
    it ended from the closed pipe (SIGPIPE) or was killed here for not ending."""
    pipe.stream.close()
    try:
        status = pipe.proc.wait(_EXIT_WAIT_S if failure is not None else None)
    except subprocess.TimeoutExpired:
        pipe.proc.kill()
        pipe.status = pipe.proc.wait()
        return
    pipe.status = status  # so that webdataset's own close does not wait for it again
    if status in (0, *pipe.ignore_status):
        return
    if failure is not None and status == -signal.SIGPIPE:
        return
    raise _exit_error(url, status) from failure


@contextmanager
def _gopen(url: str) -> Iterator[Read]:
    from webdataset.gopen import Pipe, gopen  # noqa: PLC0415 -- on use: webdataset imports torch

    try:
        stream = gopen(url, "rb")
    except (OSError, ValueError) as e:
        raise SourceError(f"{url}: cannot open: {e}") from e
    failure: BaseException | None = None
    try:
        yield stream.read
    except BaseException as e:
        failure = e
        raise
    finally:
        if isinstance(stream, Pipe):
            _close_pipe(url, stream, failure)
        else:
            stream.close()


class _Chunks:
    """`read(n)` over an iterator of byte chunks (short reads; `b""` at the end)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._chunk = memoryview(b"")

    def read(self, size: int) -> bytes:
        if not self._chunk:
            self._chunk = memoryview(next(self._chunks, b""))
        data, self._chunk = self._chunk[:size], self._chunk[size:]
        return bytes(data)


class MissingSourcePackageError(SourceError, ImportError):
    """A source URL's scheme needs a package that is not installed (the message names it)."""


@contextmanager
def _storage_open(url: str) -> Iterator[Read]:
    prefix, _, name = url.rpartition("/")
    if not name or "://" not in prefix or prefix.endswith("/"):
        raise SourceError(f"{url}: expected a URL of a .tar object (scheme://bucket/name.tar)")
    try:
        location = Location(prefix)
        size = location.size(name)
    except MissingDependencyError as e:
        raise MissingSourcePackageError(f"{url}: cannot open: {e}") from e
    except (OSError, ValueError) as e:
        raise SourceError(f"{url}: cannot open: {e}") from e
    if size is None:
        raise SourceError(f"{url}: not found")
    yield _Chunks(location.iter_chunks(name, size, _CHUNK_BYTES)).read


@contextmanager
def open_remote(url: str) -> Iterator[Read]:
    """`read(n)` over the bytes of the remote shard `url`, streaming. SourceError naming `url`
    when it cannot be opened or read, or when its command or download fails."""
    opener = _gopen if scheme(url) == "pipe" else _storage_open
    try:
        with opener(url) as read:
            yield read
    except OSError as e:
        raise SourceError(f"{url}: cannot read: {e}") from e


def name_problem(extension: str) -> str | None:
    """Why a member extension cannot be a field name, or None when it can."""
    if extension.endswith(ZSTD_SUFFIX):
        return "is zstd-compressed (compressed members are not passed through)"
    try:
        FieldSpec(name=extension, type=type_of_extension(extension))
    except ManifestError:
        return "is not a field name (1 to 40 characters of a-z 0-9 _ in dot-separated parts)"
    return None
