"""How far ahead a stream fetches, chosen from what it measures: the time a shard takes to
download, and the time the stream takes to read a shard once it has it."""

from __future__ import annotations

import math
import threading
import time


class PrefetchDepth:
    """Shards to request ahead of the one being read: at least `window` (the next window then
    downloads while this one is read), more when a download takes longer than reading the
    shards ahead of it, at most `limit`. `fixed` pins it (the user's `prefetch`)."""

    def __init__(self, *, window: int, limit: int, fixed: bool = False) -> None:
        self.window, self.limit, self.fixed = window, limit, fixed
        self._lock = threading.Lock()
        self._download_s = 0.0  # smoothed seconds per shard download
        self._read_s = 0.0  # seconds spent reading (not waiting) since the first shard
        self._read_shards = 0
        self._returned_at: float | None = None
        self._last = -1

    @property
    def depth(self) -> int:
        if self.fixed:
            return self.limit
        with self._lock:
            if self._download_s == 0 or self._read_shards == 0 or self._read_s == 0:
                return min(self.window, self.limit)
            per_shard = self._read_s / self._read_shards
            wanted = math.ceil(self._download_s / per_shard) + 1
        return max(1, min(self.limit, max(self.window, wanted)))

    def downloaded(self, seconds: float) -> None:
        """A shard took `seconds` to download (threads of the pool call this)."""
        with self._lock:
            self._download_s = (
                seconds if not self._download_s else 0.7 * self._download_s + 0.3 * seconds
            )

    def asking(self, position: int) -> None:
        """The reader asks for shard `position`: the time since its last shard arrived was
        spent reading the shards in between."""
        now = time.perf_counter()
        with self._lock:
            if position > self._last and self._returned_at is not None:
                self._read_s += now - self._returned_at
                self._read_shards += position - self._last
            self._last = max(self._last, position)

    def received(self) -> None:
        """The shard asked for is there."""
        self._returned_at = time.perf_counter()
