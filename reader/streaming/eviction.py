"""Which cached shards go first when a download needs room in the node's shard cache.

`ShardCache` asks its `EvictionPolicy` twice: `used(path)` when a stream finds a shard cached and
is about to read it, and `victims(entries)` for the order in which to delete the whole shards
that the stream making room does not need. Every process of the node has its own policy object,
so what a policy knows of the others' reads it keeps in the directory (each entry's `mtime`).
The cache keeps the rest: the byte limit, the lock, the downloads in flight and the shards a
stream needs (see `cache`). `default_policy` is the one every `ShardCache` uses unless given
another: changing the eviction policy of `StreamingDataset` is a change to this module.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class CacheEntry:
    """A file of the cache directory: a whole shard, or a download in flight (`partial`)."""

    path: Path
    size: int
    mtime: float
    partial: bool


class EvictionPolicy(Protocol):
    """Orders the evictable shards of a cache; see the module's docstring."""

    def used(self, path: Path) -> None:
        """The cached shard at `path` is about to be read. A FileNotFoundError (evicted by
        another process meanwhile) reaches the cache, which counts the shard as absent."""
        ...

    def victims(self, entries: Sequence[CacheEntry]) -> list[CacheEntry]:
        """`entries` (whole shards that may go) in the order in which to delete them until the
        download fits."""
        ...


class LeastRecentlyUsed:
    """The shard read longest ago goes first: reading a shard sets its `mtime` to now."""

    def used(self, path: Path) -> None:
        os.utime(path)

    def victims(self, entries: Sequence[CacheEntry]) -> list[CacheEntry]:
        return sorted(entries, key=lambda e: e.mtime)


def default_policy() -> EvictionPolicy:
    """The policy of a `ShardCache` given none, and so of every `StreamingDataset`."""
    return LeastRecentlyUsed()
