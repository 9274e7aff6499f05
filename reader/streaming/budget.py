"""How the streams of a node share its bounded shard cache (`CacheBudget`).

First comes each stream's working set, `(shuffle_window + prefetch) x largest shard`: its current
window and the shards fetched ahead of it, evicted as the cache's policy says (`eviction`). What is
left of a rank's part of the cache holds *resident* shards, a fixed set per rank that it reads
every epoch and never evicts (`residency`; the plans put them in the rank's span: `planner`). A
limit below one stream's working set is refused. The ranks of a node (`LOCAL_WORLD_SIZE`) share
its cache evenly, so all of them must be given the same limit and worker count.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastpack.formats import Manifest

from .options import StreamingOptions
from .prefetch import PrefetchDepth
from .residency import rank_budget


@dataclass(frozen=True, kw_only=True)
class CacheBudget:
    """A node's cache of `limit` bytes (None: unbounded, or nothing is cached), shared by
    streams that each read windows of `window` shards and fetch up to `ahead` shards ahead of
    the one they read (`fixed`: exactly `ahead`, the user's `prefetch`), of at most `largest`
    bytes each."""

    limit: int | None
    window: int
    ahead: int
    fixed: bool
    largest: int

    @classmethod
    def of(cls, options: StreamingOptions, manifest: Manifest, *, cached: bool) -> CacheBudget:
        """The budget of a dataset made with `options` and described by `manifest`, whose
        shards are fetched into a cache (`cached`) or read in place (no limit applies)."""
        return cls(
            limit=options.cache_limit if cached else None,
            window=options.shuffle_window,
            ahead=options.ahead_limit,
            fixed=options.prefetch is not None,
            largest=max((s.bytes for s in manifest.shards), default=0),
        )

    @property
    def working_shards(self) -> int:
        """Shards one stream holds at once: its window and the shards fetched ahead."""
        return self.window + self.ahead

    def check(self, where: str) -> None:
        """A ValueError (naming `where`) when the limit is below one stream's working set."""
        needed = self.working_shards * self.largest
        if self.limit is not None and self.limit < needed:
            raise ValueError(
                f"{where}: cache_limit={self.limit} bytes is below one stream's working "
                f"set: (shuffle_window {self.window} + prefetch {self.ahead}) x "
                f"{self.largest} bytes (largest shard) = {needed}"
            )

    def resident_bytes(self, world: int, workers: int) -> int | None:
        """Bytes of resident shards each of `world` ranks may keep when its streams are
        `workers` DataLoader workers (0: the main process); None without a limit."""
        if self.limit is None:
            return None
        return rank_budget(
            self.limit,
            world=world,
            streams=max(1, workers),
            working_shards=self.working_shards,
            largest=self.largest,
        )

    def depth(self) -> PrefetchDepth:
        """A stream's measure of how far ahead to fetch, within this budget."""
        return PrefetchDepth(window=self.window, limit=self.ahead, fixed=self.fixed)
