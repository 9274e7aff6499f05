"""Reading one input's bytes: a file (one open, one read), an object at a URL (one retried GET
through `fastpack.storage`), or a byte range of a container (a source tar's member, or bytes a
scan spilled).

A plan whose root is a URL (an ImageFolder prefix, a list file's URL "directory") names its
inputs relative to it, as relative URL references (`storage.url_paths.resolve_url`); any plan
may name an input by a whole URL. A missing object is a Reject, as a missing file is; a store
that stays unavailable after the retries raises `FetchError`: the job fails, it does not
reject.
"""

from __future__ import annotations

import os
import stat
from types import TracebackType

from fastpack.storage import is_url
from fastpack.storage.objects import Objects
from fastpack.storage.url_paths import resolve_url

from ..images.policy import Reject
from ..planning.plan_store import PlanMeta
from ..sources.scan import NO_CONTAINER

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_file(path: str) -> bytes | Reject:
    """The whole file, or a Reject for anything that is not a readable regular file.

    O_NONBLOCK keeps a FIFO from blocking the build; it does not change regular-file reads."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as e:
        return Reject(f"cannot read: {e.strerror}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Reject("cannot read: not a regular file")
        with open(fd, "rb", buffering=0, closefd=False) as file:
            return file.readall()
    except OSError as e:
        return Reject(f"cannot read: {e.strerror}")
    finally:
        os.close(fd)


def read_object(objects: Objects, url: str) -> bytes | Reject:
    """The whole object at `url`, or a Reject naming it where there is none or it may not be
    read; `FetchError` where the store stays unavailable."""
    try:
        return objects.read(url)
    except FileNotFoundError:
        return Reject(f"cannot read: {url}: not found")
    except PermissionError as e:
        return Reject(f"cannot read: {url}: access denied ({e})")


class InputReader:
    """Reads the inputs of one plan; keeps the containers it touches open until `close`."""

    def __init__(self, meta: PlanMeta) -> None:
        self._root = meta.root
        self._remote = is_url(meta.root)
        self._containers = meta.containers
        self._open: dict[int, int] = {}
        self._objects = Objects()  # one Location per bucket, made on first use

    def read(self, source: bytes, container: int, offset: int, size: int) -> bytes | Reject:
        """An image: the file `source` (relative to the plan's root), or a container's bytes."""
        if not self._containers or container == NO_CONTAINER:
            return self.read_path(os.fsdecode(source))
        return self.read_member(container, offset, size)

    def read_path(self, path: str) -> bytes | Reject:
        """The file or object `path`, relative to the plan's root (or a whole URL)."""
        if self._remote:
            return read_object(self._objects, resolve_url(self._root, path))
        if is_url(path):
            return read_object(self._objects, path)
        return read_file(os.path.join(self._root, path))

    def read_member(self, container: int, offset: int, size: int) -> bytes | Reject:
        """`size` bytes at `offset` of container `container`."""
        if not 0 <= container < len(self._containers):
            return Reject(f"cannot read: no container {container} in the plan")
        try:
            fd = self._open.get(container)
            if fd is None:
                path = os.path.join(self._root, self._containers[container])
                fd = self._open[container] = os.open(path, _FLAGS)
            data = os.pread(fd, size, offset)
        except OSError as e:
            return Reject(f"cannot read: {e.strerror}")
        if len(data) != size:
            return Reject(f"cannot read: tar member cut off ({len(data)} of {size} bytes)")
        return data

    def close(self) -> None:
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()

    def __enter__(self) -> InputReader:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
