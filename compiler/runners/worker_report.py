"""The per-worker lines of a cluster build's summary."""

from __future__ import annotations

from collections.abc import Iterable

from .shard_task import TaskResult


def worker_lines(results: Iterable[TaskResult]) -> tuple[str, ...]:
    """One line per worker: shards built, samples, input MB and samples/s while busy."""
    by_worker: dict[str, list[TaskResult]] = {}
    for result in results:
        by_worker.setdefault(result.worker, []).append(result)
    lines = []
    for worker in sorted(by_worker):
        done = [r for r in by_worker[worker] if not r.skipped]
        samples = sum(r.record.planned for r in done)
        busy = sum(r.seconds for r in done)
        rate = f", {samples / busy:,.0f} inputs/s busy" if busy > 0 else ""
        lines.append(
            f"worker {worker}: {len(done)} shards, {samples:,} inputs, "
            f"{sum(r.input_bytes for r in done) / 1e6:,.1f} MB read in {busy:.1f} s{rate}"
        )
    return tuple(lines)
