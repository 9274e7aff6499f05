"""The cache's eviction policy behind its protocol: least recently used by default, and another
policy (first in, first out) plugged into a `ShardCache` is the one that decides."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from fastpack.reader.streaming.cache import ShardCache
from fastpack.reader.streaming.eviction import (
    CacheEntry,
    EvictionPolicy,
    LeastRecentlyUsed,
    default_policy,
)

SIZE = 1000  # bytes of each shard


class FirstInFirstOut:
    """The shard cached first goes first, however often it is read: reading it changes nothing
    (its `mtime` stays the time its download finished). Records what the cache asks."""

    def __init__(self) -> None:
        self.read: list[Path] = []
        self.asked: list[list[Path]] = []

    def used(self, path: Path) -> None:
        self.read.append(path)

    def victims(self, entries: Sequence[CacheEntry]) -> list[CacheEntry]:
        self.asked.append(sorted(e.path for e in entries))
        return sorted(entries, key=lambda e: e.mtime)


def put(cache: ShardCache, name: str, written_at: float) -> None:
    """A shard `name` downloaded into `cache`, its download done at `written_at`."""
    tmp = cache.reserve(name, SIZE, keep=())
    os.replace(tmp, cache.path(name))
    os.utime(cache.path(name), (written_at, written_at))


def fill(cache: ShardCache) -> None:
    """Shards a, b, c cached in that order, then a read: a cache of 3 shards, full."""
    for k, name in enumerate(("shards/a.tar", "shards/b.tar", "shards/c.tar")):
        put(cache, name, 1_000_000 + k)
    assert cache.lookup("shards/a.tar", SIZE) == cache.path("shards/a.tar")


def cached(cache: ShardCache) -> list[str]:
    return sorted(p.name for p in (cache.root / "shards").glob("*.tar"))


def test_least_recently_used_is_the_default(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path, 3 * SIZE)
    assert isinstance(cache.policy, LeastRecentlyUsed)
    assert isinstance(default_policy(), LeastRecentlyUsed)
    fill(cache)
    assert cache.path("shards/a.tar").stat().st_mtime > 1_000_002  # the read made it recent
    put(cache, "shards/d.tar", 1_000_010)
    assert cached(cache) == ["a.tar", "c.tar", "d.tar"]  # b: read longest ago


def test_a_policy_plugged_in_decides_what_goes(tmp_path: Path) -> None:
    policy = FirstInFirstOut()
    cache = ShardCache(tmp_path, 3 * SIZE, policy)
    fill(cache)
    assert policy.read == [cache.path("shards/a.tar")]
    assert cache.path("shards/a.tar").stat().st_mtime == 1_000_000  # reading changed nothing
    put(cache, "shards/d.tar", 1_000_010)
    assert cached(cache) == ["b.tar", "c.tar", "d.tar"]  # a: cached first, read or not
    assert policy.asked[-1] == [cache.path(f"shards/{n}.tar") for n in "abc"]


def test_the_policy_sees_only_what_may_go(tmp_path: Path) -> None:
    """Downloads in flight and the shards the stream keeps are never offered."""
    policy = FirstInFirstOut()
    cache = ShardCache(tmp_path, 3 * SIZE, policy)
    fill(cache)
    cache.reserve("shards/d.tar", SIZE, keep=["shards/a.tar"])  # left in flight
    assert policy.asked[-1] == [cache.path("shards/b.tar"), cache.path("shards/c.tar")]
    assert cached(cache) == ["a.tar", "c.tar"]
    policy.asked.clear()
    cache.reserve("shards/e.tar", SIZE, keep=["shards/a.tar", "shards/c.tar"])
    assert policy.asked == [[]]  # the .part of d is not a victim either
    assert cached(cache) == ["a.tar", "c.tar"]  # over the limit: nothing it may evict


def test_an_unbounded_cache_never_asks(tmp_path: Path) -> None:
    policy = FirstInFirstOut()
    cache = ShardCache(tmp_path, None, policy)
    fill(cache)
    put(cache, "shards/d.tar", 1_000_010)
    assert policy.asked == []
    assert cached(cache) == ["a.tar", "b.tar", "c.tar", "d.tar"]


def test_least_recently_used_alone(tmp_path: Path) -> None:
    policy: EvictionPolicy = LeastRecentlyUsed()
    entries = [CacheEntry(tmp_path / n, SIZE, t, partial=False) for n, t in (("x", 5), ("y", 2))]
    assert [e.path.name for e in policy.victims(entries)] == ["y", "x"]
    shard = tmp_path / "x"
    shard.write_bytes(b"x")
    os.utime(shard, (5, 5))
    policy.used(shard)
    assert shard.stat().st_mtime > 5
    with pytest.raises(FileNotFoundError):
        policy.used(tmp_path / "gone")  # the cache counts the shard as absent


def test_a_shard_evicted_meanwhile_is_absent(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path, None, LeastRecentlyUsed())
    assert cache.lookup("shards/a.tar", SIZE) is None
