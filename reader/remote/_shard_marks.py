"""This process's handles on a sparse cached index: its descriptor for writing rows, the sidecar of
per-shard "present" bytes, and the locks that keep two streams of a node from fetching the same
shard's rows at once (a thread lock per shard inside the process, a `lockf` record lock on the
shard's byte of the sidecar between processes)."""

from __future__ import annotations

import fcntl
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PRESENT = b"\x01"


def create_marks(path: Path, shards: int) -> None:
    """The sidecar at `path` with a byte per shard, zero (absent) unless already written."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size < shards:
            os.ftruncate(fd, shards)  # extends with zeros; never drops a marker written
    finally:
        os.close(fd)


def write_at(fd: int, data: bytes, at: int) -> None:
    """All of `data` into the file `fd` at byte `at`."""
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, at)
        view, at = view[done:], at + done


def _close_all(fds: tuple[int, ...]) -> None:
    for fd in fds:
        os.close(fd)


class ShardMarks:
    """Descriptors of process `pid` on the index and its sidecar, closed when the object is
    collected, so never under a thread still using them. Record locks belong to the process and
    go when any of its descriptors of the file is closed: the sidecar is opened once per process."""

    def __init__(self, index: Path, marks: Path) -> None:
        self.pid = os.getpid()
        self._index_fd = os.open(index, os.O_WRONLY)
        try:
            self._marks_fd = os.open(marks, os.O_RDWR)
        except OSError:
            os.close(self._index_fd)
            raise
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()
        self._closer = weakref.finalize(self, _close_all, (self._index_fd, self._marks_fd))

    def present(self, shard: int) -> bool:
        return os.pread(self._marks_fd, 1, shard) == PRESENT

    def mark(self, shard: int) -> None:
        """Mark `shard`'s rows present: call only once they are all written."""
        os.pwrite(self._marks_fd, PRESENT, shard)

    def write(self, data: bytes, at: int) -> None:
        """`data` into the index at byte `at`."""
        write_at(self._index_fd, data, at)

    @contextmanager
    def exclusive(self, shard: int) -> Iterator[None]:
        """Hold `shard` against the other threads of this process and the other processes."""
        with self._guard:
            lock = self._locks.setdefault(shard, threading.Lock())
        with lock:
            fcntl.lockf(self._marks_fd, fcntl.LOCK_EX, 1, shard)
            try:
                yield
            finally:
                fcntl.lockf(self._marks_fd, fcntl.LOCK_UN, 1, shard)
