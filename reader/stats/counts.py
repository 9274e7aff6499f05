"""What this process's readers have read: the bytes of the members handed to decoding (added
by the thread that decodes) and the shards found in the node's shard cache (added by the
threads that fetch, under a lock, made anew in a forked child). Totals since the process
started; a worker's recorder takes their growth (`recorder`)."""

from __future__ import annotations

import os
import threading


class ReadCounts:
    def __init__(self) -> None:
        self.bytes_read = 0
        self.cache_hits = 0
        self._lock = threading.Lock()

    def cache_hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    def _after_fork(self) -> None:
        self._lock = threading.Lock()


READ_COUNTS = ReadCounts()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=READ_COUNTS._after_fork)
