"""What this process has fetched and retried: bytes that came over the network (or from a
mounted file system copied to local disk) and the calls tried again, for `loader.stats()`.

One `IoCounts` per process (`IO_COUNTS`), added to by the download and copy threads under a
lock; a forked child starts with the parent's totals and a fresh lock (a lock held by another
thread at the fork would never be released in the child). Readers take differences of totals.
"""

from __future__ import annotations

import os
import threading


class IoCounts:
    """Totals of this process since it started (a forked child: since its parent started)."""

    def __init__(self) -> None:
        self.fetched_bytes = 0
        self.retries = 0
        self._lock = threading.Lock()

    def fetched(self, nbytes: int) -> None:
        with self._lock:
            self.fetched_bytes += nbytes

    def retried(self) -> None:
        with self._lock:
            self.retries += 1

    def _after_fork(self) -> None:
        self._lock = threading.Lock()


IO_COUNTS = IoCounts()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=IO_COUNTS._after_fork)
