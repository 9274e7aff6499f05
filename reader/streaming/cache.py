"""A local directory of whole shards, bounded in bytes, shared by the streams of one node.

A shard appears under its name only when complete and checked (atomic rename). A download in
flight is a `.part` file truncated to its full size from the start, so every stream counts it.
A stream makes room for a download by deleting shards that it does not need itself, in the order
its `EvictionPolicy` gives (least recently used unless told otherwise: `eviction`), under an
exclusive `flock` on the cache's `.lock` file, held for that bookkeeping only (the cache is a
local directory; the dataset itself is never locked). A stream maps a shard as soon as it has it,
so another stream's deletion never takes bytes from under a reader (POSIX keeps unlinked files
readable while open). The limit holds as long as it leaves room for the shards each stream of
the node needs at once (see `budget`).
"""

from __future__ import annotations

import fcntl
import os
import stat
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from fastpack.formats.layout import SHARD_SUFFIXES
from fastpack.storage.download import final_name, temp_name

from .eviction import CacheEntry, EvictionPolicy, default_policy

PART_SUFFIX = ".part"
LOCK_NAME = ".lock"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive `flock` on `path` (created if needed), across the processes of a node."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class ShardCache:
    """Whole shards of one dataset under `root`, at most `limit_bytes` together (None: no
    limit), evicted in the order `policy` gives (None: `eviction.default_policy`). Names are the
    manifest's shard names (`shards/000042.tar`, `.tfrecord`)."""

    def __init__(
        self, root: Path, limit_bytes: int | None, policy: EvictionPolicy | None = None
    ) -> None:
        if limit_bytes is not None and limit_bytes < 0:
            raise ValueError(f"cache limit must be >= 0 bytes, got {limit_bytes}")
        self.root = root
        self.limit_bytes = limit_bytes
        self.policy = policy or default_policy()
        self._lock = threading.Lock()

    def path(self, name: str) -> Path:
        return self.root / name

    def lookup(self, name: str, size: int) -> Path | None:
        """The cached shard `name` if it is there with `size` bytes; tells the policy it is
        used."""
        path = self.path(name)
        try:
            if path.stat().st_size != size:
                return None
            self.policy.used(path)
        except FileNotFoundError:
            return None
        return path

    def reserve(self, name: str, size: int, keep: Collection[str]) -> Path:
        """Make room for `size` bytes and create the download's `.part` file at that size;
        `keep` names the shards the calling stream still needs (never evicted by it)."""
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_name(path)
        with self._lock, _locked(self.root / LOCK_NAME):
            self._evict(size, keep)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        return tmp

    def usage(self) -> int:
        """Bytes of the shards and downloads in the directory now."""
        return sum(e.size for e in self._entries())

    def _entries(self) -> list[CacheEntry]:
        """The shards and downloads now in the directory. A download renamed while the
        directory is read can be missed under both names (the new name may take a slot the
        listing has passed), so a vanished `.part` is looked up under its final name."""
        entries: dict[Path, CacheEntry] = {}
        for directory in {self.root, *(p for p in self.root.glob("*") if p.is_dir())}:
            try:
                scan = [Path(item.path) for item in os.scandir(directory) if _is_shard(item.name)]
            except FileNotFoundError:
                continue
            for path in scan:
                entry = _stat(path)
                if entry is None and path.name.endswith(PART_SUFFIX):
                    entry = _stat(path.with_name(final_name(path.name)))
                if entry is not None:
                    entries[entry.path] = entry
        return list(entries.values())

    def _evict(self, incoming: int, keep: Collection[str]) -> None:
        if self.limit_bytes is None:
            return
        entries = self._entries()
        used = sum(e.size for e in entries) + incoming
        kept = {self.path(name) for name in keep}
        evictable = [e for e in entries if not e.partial and e.path not in kept]
        for victim in self.policy.victims(evictable):
            if used <= self.limit_bytes:
                return
            victim.path.unlink(missing_ok=True)
            used -= victim.size

    def remove_stale_downloads(self) -> None:
        """Delete `.part` files left by processes that no longer run."""
        for entry in self._entries():
            if entry.partial and not _owner_alive(entry.path.name):
                entry.path.unlink(missing_ok=True)


def _stat(path: Path) -> CacheEntry | None:
    """`path` as a cache entry; None if it is gone or not a regular file."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return CacheEntry(path, st.st_size, st.st_mtime, path.name.startswith("."))


_SHARD_SUFFIXES = (*SHARD_SUFFIXES.values(), PART_SUFFIX)  # `.tar`, `.tfrecord`, downloads


def _is_shard(name: str) -> bool:
    return name.endswith(_SHARD_SUFFIXES)


def _owner_alive(part_name: str) -> bool:
    """Whether the process named in `.<name>.<pid>.<thread>.part` still runs."""
    fields = part_name.split(".")
    try:
        pid = int(fields[-3])
    except (IndexError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
