"""`LoaderStats`: what a loader did over an interval of training, for a training log."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class WorkerStats:
    """One worker's share of an interval (loading in the training process: that process's).

    The times are the worker's wall-clock time, in seconds: `busy_seconds` making batches, of
    which `read_seconds` waiting for shard bytes (`io="pread"`: the batch's reads; a stream: a
    shard's download, or its opening; `io="mmap"` reads as decoding touches the pages, so
    those reads count as decoding), `allocate_seconds` taking the batch's shared memory, and
    `decode_seconds` the rest: decoding with the transform, which is one call per image
    (fastpack's crops decode only the region they keep, at a reduced scale: decoding and
    transforming have no boundary between them), and the batch's bookkeeping. The rest of the
    interval the worker waited for work (the DataLoader hands out at most `prefetch_factor`
    batches per worker ahead of the trainer) or handed its batches over.
    `fresh_blocks` counts batches that found every one of the worker's shared-memory slots
    still held by the trainer, and went in a new block instead (workers never wait for a
    slot). `bytes_read` are the bytes of the members decoded; `bytes_fetched` those
    downloaded (or copied from a mounted file system into the shard cache), `cache_hits` the
    shards found in the node's shard cache, `retries` the calls to the object store tried
    again: counted by the worker's process, whose threads fetch ahead of its batches.
    """

    worker: int
    batches: int
    samples: int
    busy_seconds: float
    read_seconds: float
    decode_seconds: float
    allocate_seconds: float
    fresh_blocks: int
    bytes_read: int
    bytes_fetched: int
    cache_hits: int
    retries: int


@dataclass(frozen=True, kw_only=True)
class LoaderStats:
    """What a loader did between two calls of its `stats()` (the first: since its first batch
    was asked for, so that it includes the workers' start).

    The trainer's side: `batches` and `samples` it took, `wait_seconds` it spent in the
    iterator's `next()` and its share of the `seconds` of the interval (`wait_share`),
    `images_per_second` taken. `workers`: each worker's counts (`WorkerStats`; loading in the
    training process, `in_process`, one for that process; none where the loader counts
    nothing per worker, as DALI, whose pipeline reports no per-stage times). The byte and
    shard counts add up the workers' (None: not counted by this loader). `verdict`: the one
    line that says what limits training, from these counts alone (`stats.verdict`).
    `device_decode_seconds`: of the wait, the trainer's time decoding on its device
    (`make_loader(loader="nvimgcodec")`; None for a loader that decodes elsewhere).
    """

    seconds: float
    batches: int
    samples: int
    images_per_second: float
    wait_seconds: float
    wait_share: float
    in_process: bool
    workers: tuple[WorkerStats, ...]
    bytes_read: int | None
    bytes_fetched: int | None
    cache_hits: int | None
    retries: int | None
    verdict: str
    device_decode_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stats as a JSON-ready dict (the workers as a list of dicts)."""
        values = dataclasses.asdict(self)
        values["workers"] = list(values["workers"])
        return values

    def format(self) -> str:
        """A few lines for a training log: the trainer's side, the workers', the verdict."""
        lines = [
            f"loader: {self.batches:,} batches, {self.samples:,} samples in "
            f"{self.seconds:.1f} s ({self.images_per_second:,.0f}/s); the trainer waited "
            f"{self.wait_share:.0%} of the time"
            + (
                ""
                if self.device_decode_seconds is None
                else f", decoding on its device {self.device_decode_seconds:.2f} s of it"
            )
        ]
        if self.workers:
            lines.append(self._workers_line())
        lines.append(f"verdict: {self.verdict}")
        return "\n".join(lines)

    def _workers_line(self) -> str:
        shares = time_shares(self.workers, self.seconds)
        count = len(self.workers)
        who = f"{count} worker" + ("s" if count > 1 else "")
        who = "in the training process" if self.in_process else who
        parts = ", ".join(f"{name} {share:.0%}" for name, share in shares.items())
        fresh = sum(w.fresh_blocks for w in self.workers)
        made = sum(w.batches for w in self.workers)
        counts = [
            f"{made:,} batch{'es' if made != 1 else ''} made"
            + (f" ({fresh:,} outside the slots)" if fresh else ""),
            f"read {_size(self.bytes_read)}",
            f"fetched {_size(self.bytes_fetched)}",
            f"{self.cache_hits or 0:,} cache hits",
            f"{self.retries or 0:,} retries",
        ]
        return f"{who}: {parts}; {', '.join(counts)}"


def time_shares(workers: tuple[WorkerStats, ...], seconds: float) -> dict[str, float]:
    """Where the workers' time went, as shares of all their time over `seconds`: decoding,
    reading, allocating and idle (waiting for work, or handing batches over)."""
    total = len(workers) * seconds
    if total <= 0:
        return {"decoding": 0.0, "reading": 0.0, "allocating": 0.0, "idle": 0.0}
    busy = sum(w.busy_seconds for w in workers)
    return {
        "decoding": sum(w.decode_seconds for w in workers) / total,
        "reading": sum(w.read_seconds for w in workers) / total,
        "allocating": sum(w.allocate_seconds for w in workers) / total,
        "idle": max(0.0, 1 - busy / total),
    }


def _size(nbytes: int | None) -> str:
    if nbytes is None:
        return "-"
    if nbytes < _STEP:
        return f"{nbytes} B"
    value, unit = nbytes / _STEP, 0
    while value >= _STEP and unit < len(_UNITS) - 1:
        value, unit = value / _STEP, unit + 1
    return f"{value:,.1f} {_UNITS[unit]}"


_UNITS = ("KiB", "MiB", "GiB", "TiB")
_STEP = 1024  # from one binary unit to the next
