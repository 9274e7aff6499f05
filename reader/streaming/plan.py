"""Which samples each stream (rank x worker) reads in an epoch, and in what order.

An epoch is the dataset's shards in a seeded permutation, read as one sequence of samples (of a
view: the view's rows of each shard).
Rank `r` of `R` takes positions `[r*n, (r+1)*n)` of that sequence, with `n = ceil(N/R)` (the
positions past `N` wrap to the start: up to `R-1` samples are read twice) or, with `drop_last`,
`n = floor(N/R)` (up to `R-1` samples are left out). The rank's span is split evenly over its
DataLoader workers. A stream's span crosses whole shards plus at most one partial shard at each
end, as `Chunk`s; consecutive chunks are grouped into windows of `window` shards (but the first
window, of one shard: a stream's first batch waits for one shard only), and each window's
samples are shuffled together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
_SHARD_KEY = 0  # distinct seed streams for the shard permutation and the window shuffles
_WINDOW_KEY = 1


class Stream(NamedTuple):
    """One reader of an epoch: DataLoader worker `worker` of `workers` on rank `rank` of `world`."""

    rank: int
    world: int
    worker: int
    workers: int

    def describe(self) -> str:
        return f"rank {self.rank}/{self.world}, worker {self.worker}/{self.workers}"


@dataclass(frozen=True, slots=True)
class Chunk:
    """Samples `[start, stop)` of the epoch's numbering (dataset indices, or positions in a
    view's rows), all in shard `shard`."""

    shard: int
    start: int
    stop: int


@dataclass(frozen=True, kw_only=True)
class StreamPlan:
    """The windows of one stream in one epoch."""

    seed: int
    epoch: int
    shuffle: bool
    windows: tuple[tuple[Chunk, ...], ...]
    window_starts: tuple[int, ...]  # position of each window in the epoch sequence
    rows: IntArray | None = field(default=None, compare=False, repr=False)  # a view's rows

    @property
    def num_samples(self) -> int:
        return sum(c.stop - c.start for w in self.windows for c in w)

    def window_samples(self, w: int) -> IntArray:
        """Dataset indices of window `w`, in reading order."""
        ids = np.concatenate([np.arange(c.start, c.stop, dtype=np.int64) for c in self.windows[w]])
        if self.shuffle:
            rng = np.random.default_rng((self.seed, self.epoch, _WINDOW_KEY, self.window_starts[w]))
            rng.shuffle(ids)
        return ids if self.rows is None else self.rows[ids]

    def parts(self, start: int, stop: int) -> list[Part]:
        """Positions `[start, stop)` of the stream, as runs of consecutive samples of its
        windows."""
        parts, first = [], 0
        for w, window in enumerate(self.windows):
            last = first + sum(c.stop - c.start for c in window)
            if start < last and first < stop:
                parts.append(Part(self, w, max(start, first) - first, min(stop, last) - first))
            first = last
        return parts


class Part(NamedTuple):
    """Samples `[start, stop)` (in reading order) of window `window` of `plan`."""

    plan: StreamPlan
    window: int
    start: int
    stop: int

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self.plan.windows[self.window]

    def samples(self) -> IntArray:
        """Their dataset indices, in reading order."""
        return self.plan.window_samples(self.window)[self.start : self.stop]


def shard_order(num_shards: int, seed: int, epoch: int, shuffle: bool) -> IntArray:
    if not shuffle:
        return np.arange(num_shards, dtype=np.int64)
    return np.random.default_rng((seed, epoch, _SHARD_KEY)).permutation(num_shards)


def rank_span(total: int, world: int, rank: int, drop_last: bool) -> tuple[int, int]:
    """Positions `[start, stop)` of rank `rank` in the epoch sequence (may pass `total`)."""
    per = total // world if drop_last else -(-total // world)
    return rank * per, (rank + 1) * per


def split_span(start: int, stop: int, parts: int, part: int) -> tuple[int, int]:
    n = stop - start
    return start + n * part // parts, start + n * (part + 1) // parts


def span_chunks(order: IntArray, counts: IntArray, start: int, stop: int) -> list[Chunk]:
    """Chunks covering positions `[start, stop)` of the epoch sequence, wrapping past its end."""
    total = int(counts.sum())
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)  # dataset index
    ends = np.cumsum(counts[order]).astype(np.int64)  # position after each shard of `order`
    chunks: list[Chunk] = []
    while start < stop and total:
        base = start - start % total
        hi = min(stop, base + total) - base
        lo = start - base
        k = int(np.searchsorted(ends, lo, side="right"))
        while k < len(order) and ends[k] - counts[order[k]] < hi:
            shard = int(order[k])
            shard_pos = int(ends[k] - counts[shard])
            s, e = max(lo, shard_pos), min(hi, int(ends[k]))
            if e > s:
                offset = int(first[shard]) - shard_pos
                chunks.append(Chunk(shard, s + offset, e + offset))
            k += 1
        start = base + hi
    return chunks


def stream_plan(  # noqa: PLR0913 -- keyword inputs: every input of an epoch's plan
    counts: IntArray,
    stream: Stream,
    *,
    seed: int,
    epoch: int,
    shuffle: bool,
    window: int,
    drop_last: bool,
    order: IntArray | None = None,
    rows: IntArray | None = None,
) -> StreamPlan:
    """The plan of `stream` in `epoch`; `counts[s]` is the number of samples of shard `s`.
    `order` replaces the epoch's seeded shard order (see `residency.resident_order`); `rows`:
    a view's rows, which the plan's positions number (`counts`: the view's rows per shard)."""
    if order is None:
        order = shard_order(len(counts), seed, epoch, shuffle)
    start, stop = rank_span(int(counts.sum()), stream.world, stream.rank, drop_last)
    start, stop = split_span(start, stop, stream.workers, stream.worker)
    chunks = span_chunks(order, counts, start, stop)
    # The first window is one chunk, so that a stream's first samples wait for one shard.
    starts = [0, *range(1, len(chunks), window)] if chunks else []
    ends = [*starts[1:], len(chunks)][: len(starts)]
    windows = tuple(tuple(chunks[a:b]) for a, b in zip(starts, ends, strict=True))
    starts, position = [], start
    for w in windows:
        starts.append(position)
        position += sum(c.stop - c.start for c in w)
    return StreamPlan(
        seed=seed,
        epoch=epoch,
        shuffle=shuffle,
        windows=windows,
        window_starts=tuple(starts),
        rows=rows,
    )
