"""Live loader stats: `loader.stats()` on whatever `make_loader` returns gives a `LoaderStats`
of the interval since its previous call: how long the trainer waited for batches, what each
worker spent its time on (reading, decoding, allocating), the bytes read and fetched, the shard
cache hits and retries, and a verdict on what limits training. Workers add to a row of shared
counters each (`block`, `recorder`); the trainer times its own waits (`meter`)."""

from .loader_stats import LoaderStats, WorkerStats
from .meter import LoaderMeter

__all__ = ["LoaderMeter", "LoaderStats", "WorkerStats"]
