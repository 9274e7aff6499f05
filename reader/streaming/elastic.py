"""The rest of an epoch after a stop, split over another layout (ranks, workers, batch size).

A layout's streams are its ranks' DataLoader workers, rank-major: `world x max(1, workers)`
(`workers=0`: the main process reads, one stream per rank). In one epoch every rank hands out
the same number of batches, and torch's DataLoader takes them from its workers in turn (batch
`i` from worker `i % K`, the workers whose streams have ended left out), so a `Segment`
`(world, workers, batch_size, batches)` tells how many samples each stream has handed out:
no worker needs to report.

What is left of an epoch is each stream's sequence after that count, concatenated in stream
order, less every sample read already and every second copy: `R` samples, each read by nobody
yet and each once. The rank padding makes those copies: the last rank's span wraps to the
start of its sequence (`plan`), so its last samples repeat the first ones. A copy whose twin
was read is dropped; of two unread copies the first in stream order stays. The next layout
splits the `R` samples as `plan` splits an epoch: each rank `ceil(R / world)` samples (wrapping
to the start: up to `world - 1` samples read twice) or, with `drop_last`, `floor(R / world)`
(up to `world - 1` left out), each rank's share split evenly over its workers. So a resume
reads every sample not yet read, and repeats at most `world - 1` of them (its own padding); a
layout repeats samples only when its last rank reads into its padding, in its last round of
batches. Every sequence is a list of `Piece`s of the streams of the epoch's first layout, so
that after any number of segments a stream still reads through the first layout's plans: shard
after shard, each window shuffled as it was. The copies of the first layout's padding sit in
shuffled windows: `Locate` says where a stream reads a sample of its span.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..order.schema import FieldMismatch, Integer, Listed, quote
from .plan import Part, Stream, StreamPlan, rank_span, split_span

MAX_STREAMS = 2**20  # streams (ranks x workers) of a layout that a saved state may name
MAX_SEGMENTS = 4096  # layouts that a saved state may name for one epoch


class Segment(NamedTuple):
    """Part of an epoch read by one layout: `batches` batches of `batch_size` handed out by
    each of `world` ranks, each reading with `workers` DataLoader workers (0: the main
    process)."""

    world: int
    workers: int
    batch_size: int
    batches: int

    @property
    def streams_per_rank(self) -> int:
        return max(1, self.workers)

    def check(self) -> None:
        """A ValueError unless every number is in range."""
        if self.world < 1 or self.workers < 0 or self.batch_size < 1 or self.batches < 0:
            raise ValueError(
                f"segment {list(self)}: expected [world >= 1, workers >= 0, batch_size >= 1, "
                "batches >= 0]"
            )


@dataclass(frozen=True)
class SegmentField:
    """A segment as a saved state holds it, `[world, workers, batch_size, batches]`, checked
    field by field (`order.schema`), and at most `MAX_STREAMS` streams."""

    expected: str = "a list [world, workers, batch_size, batches] of integers"
    parts: tuple[Integer, ...] = (
        Integer(1, MAX_STREAMS, "world: ranks"),
        Integer(0, MAX_STREAMS, "workers: DataLoader workers per rank"),
        Integer(1, meaning="batch_size"),
        Integer(0, meaning="batches per rank"),
    )

    def __call__(self, value: Any, name: str) -> Segment:
        if not isinstance(value, list | tuple) or len(value) != len(self.parts):
            raise FieldMismatch(name, self.expected, quote(value))
        segment = Segment(
            *(c(v, f"{name}[{k}]") for k, (c, v) in enumerate(zip(self.parts, value, strict=True)))
        )
        if segment.world * segment.streams_per_rank > MAX_STREAMS:
            raise FieldMismatch(
                name, f"at most {MAX_STREAMS} streams (world x max(1, workers))", quote(value)
            )
        return segment


SEGMENTS = Listed(SegmentField(), most=MAX_SEGMENTS)


class Piece(NamedTuple):
    """Positions `[start, stop)` of the plan of stream `stream` of the epoch's first layout
    (numbered rank-major: `rank * streams per rank + worker`)."""

    stream: int
    start: int
    stop: int


Pieces = list[Piece]


@dataclass(frozen=True, kw_only=True)
class EpochProgress:
    """How far epoch `epoch` was read: its `segments` in order (none: not started), and the
    resident bytes per rank of its first layout (`residency.rank_budget`; None: none resident),
    which fix that layout's shard order."""

    epoch: int
    segments: tuple[Segment, ...]
    resident_budget: int | None


def handed_out(lengths: Sequence[int], batch_size: int, batches: int) -> list[int]:
    """Samples each of a rank's streams (of `lengths` samples) has handed out once the
    DataLoader has yielded `batches` batches of `batch_size`, taken from the streams in turn."""
    counts = [-(-n // batch_size) for n in lengths]
    if batches > sum(counts):
        raise ValueError(
            f"{batches} batches of {batch_size} counted, but a rank's streams of {list(lengths)} "
            f"samples hold {sum(counts)}"
        )
    rounds, top = 0, max(counts, default=0)  # the most full rounds that fit in `batches`
    while rounds < top:
        mid = (rounds + top + 1) // 2
        if sum(min(c, mid) for c in counts) <= batches:
            rounds = mid
        else:
            top = mid - 1
    extra = batches - sum(min(c, rounds) for c in counts)
    taken = []
    for count in counts:
        more = count > rounds and extra > 0
        extra -= more
        taken.append(min(count, rounds) + more)
    return [min(n, t * batch_size) for n, t in zip(lengths, taken, strict=True)]


def length(pieces: Sequence[Piece]) -> int:
    return sum(p.stop - p.start for p in pieces)


def take(
    pieces: Sequence[Piece], start: int, stop: int, ends: Sequence[int] | None = None
) -> Pieces:
    """Positions `[start, stop)` of the sequence `pieces`, wrapping past its end; `ends`, the
    position after each piece, when the caller takes from the same pieces many times."""
    if ends is None:
        ends = list(itertools.accumulate(p.stop - p.start for p in pieces))
    total = ends[-1] if ends else 0
    taken: Pieces = []
    while start < stop and total:
        base = start - start % total
        lo, hi = start - base, min(stop - base, total)
        k = bisect.bisect_right(ends, lo)
        while k < len(pieces) and ends[k] - (pieces[k].stop - pieces[k].start) < hi:
            piece, first = pieces[k], ends[k] - (pieces[k].stop - pieces[k].start)
            a, b = max(lo, first) - first + piece.start, min(hi, ends[k]) - first + piece.start
            _append(taken, Piece(piece.stream, a, b))
            k += 1
        start = base + hi
    return taken


def _append(pieces: Pieces, piece: Piece) -> None:
    """Add `piece`, merged into the last one when it continues it."""
    if piece.stop <= piece.start:
        return
    if pieces and pieces[-1].stream == piece.stream and pieces[-1].stop == piece.start:
        pieces[-1] = pieces[-1]._replace(stop=piece.stop)
    else:
        pieces.append(piece)


def first_layout(total: int, world: int, workers: int, drop_last: bool) -> list[Pieces]:
    """The streams of an epoch of `total` samples read from the start by `world` ranks of
    `workers` workers: each the whole of its own plan."""
    streams: list[Pieces] = []
    for rank in range(world):
        start, stop = rank_span(total, world, rank, drop_last)
        parts = max(1, workers)
        for worker in range(parts):
            first, last = split_span(start, stop, parts, worker)
            streams.append([Piece(len(streams), 0, last - first)] if last > first else [])
    return streams


def split(pieces: Sequence[Piece], world: int, workers: int, drop_last: bool) -> list[Pieces]:
    """The sequence `pieces` split over `world` ranks of `workers` workers, as an epoch is."""
    total, parts = length(pieces), max(1, workers)
    ends = list(itertools.accumulate(p.stop - p.start for p in pieces))
    streams = []
    for rank in range(world):
        start, stop = rank_span(total, world, rank, drop_last)
        for worker in range(parts):
            streams.append(take(pieces, *split_span(start, stop, parts, worker), ends))
    return streams


Unit = tuple[int, int]  # one sample: (stream of the first layout, where that stream reads it)
Locate = Callable[[int, Sequence[int]], list[int]]
"""`locate(stream, offsets)`: where first-layout stream `stream` reads the samples at `offsets`
of its span (the span in epoch order; a stream reads each window shuffled)."""


def in_span_order(stream: int, offsets: Sequence[int]) -> list[int]:
    """The `Locate` of streams that read their spans in order (no window shuffled)."""
    del stream
    return list(offsets)


def padding_copies(total: int, first: Segment, drop_last: bool, locate: Locate) -> list[list[Unit]]:
    """The samples that the streams of `first`, the first layout of an epoch of `total`
    samples, read more than once: the last rank's span wraps to the epoch's start, and each
    position `q >= total` repeats position `q % total`. For each such sample, where the streams
    read it, in stream order."""
    if drop_last or total == 0:
        return []
    world, parts = first.world, first.streams_per_rank
    per = -(-total // world)
    end = per * world
    wanted: dict[int, list[tuple[int, int]]] = defaultdict(list)  # stream: (span offset, sample)
    for sample in sorted({q % total for q in range(total, end)}):
        for q in range(sample, end, total):
            rank = q // per
            start, stop = rank_span(total, world, rank, drop_last)
            worker = _worker_of(q, start, stop, parts)
            wanted[rank * parts + worker].append(
                (q - split_span(start, stop, parts, worker)[0], sample)
            )
    copies: dict[int, list[Unit]] = defaultdict(list)
    for stream, found in sorted(wanted.items()):
        offsets = locate(stream, [offset for offset, _ in found])
        for (_, sample), offset in zip(found, offsets, strict=True):
            copies[sample].append((stream, offset))
    return [sorted(units) for _, units in sorted(copies.items())]


def _worker_of(position: int, start: int, stop: int, parts: int) -> int:
    """The worker whose part of the rank span `[start, stop)` holds `position`."""
    worker = (position - start) * parts // max(1, stop - start)
    while split_span(start, stop, parts, worker)[1] <= position:
        worker += 1
    return worker


class _Taken:
    """Units of the first layout's streams that are read or taken already: sorted, disjoint
    runs `(start, stop)` per stream."""

    def __init__(self) -> None:
        self.runs: dict[int, list[tuple[int, int]]] = defaultdict(list)

    def add(self, piece: Piece) -> None:
        if piece.stop <= piece.start:
            return
        runs, lo, hi = self.runs[piece.stream], piece.start, piece.stop
        i = bisect.bisect_left(runs, (lo,))
        if i and runs[i - 1][1] >= lo:
            i -= 1
        j = i
        while j < len(runs) and runs[j][0] <= hi:
            j += 1
        if j > i:
            lo, hi = min(lo, runs[i][0]), max(hi, runs[j - 1][1])
        runs[i:j] = [(lo, hi)]

    def gaps(self, piece: Piece) -> Pieces:
        """The parts of `piece` not taken, in order."""
        runs, at, gaps = self.runs.get(piece.stream, []), piece.start, []
        i = bisect.bisect_left(runs, (at,))
        if i and runs[i - 1][1] > at:
            i -= 1
        for lo, hi in runs[i:]:
            if lo >= piece.stop:
                break
            if lo > at:
                gaps.append(Piece(piece.stream, at, lo))
            at = max(at, hi)
        if at < piece.stop:
            gaps.append(Piece(piece.stream, at, piece.stop))
        return gaps

    def holds(self, unit: Unit) -> bool:
        stream, offset = unit
        return not self.gaps(Piece(stream, offset, offset + 1))


def rest(
    streams: Sequence[Pieces], segment: Segment, copies: Sequence[Sequence[Unit]] = ()
) -> Pieces:
    """What `segment` left of `streams` (its layout's), in stream order: each sample that no
    stream has read, once. `copies` are the units that read one sample twice in the first
    layout (`padding_copies`); a later layout's copies are the same units twice."""
    per_rank = segment.streams_per_rank
    taken, left = _Taken(), []
    for rank in range(segment.world):
        own = streams[rank * per_rank : (rank + 1) * per_rank]
        lengths = [length(s) for s in own]
        try:
            done = handed_out(lengths, segment.batch_size, segment.batches)
        except ValueError as e:
            raise ValueError(f"segment {list(segment)}: {e}") from e
        for stream, n, count in zip(own, lengths, done, strict=True):
            for piece in take(stream, 0, count):
                taken.add(piece)
            left += take(stream, count, n)
    for units in copies:  # a copy read: drop the others; none read: keep the first
        read = any(taken.holds(unit) for unit in units)
        for number, offset in units[0 if read else 1 :]:
            taken.add(Piece(number, offset, offset + 1))
    kept: Pieces = []
    for piece in left:
        for gap in taken.gaps(piece):
            _append(kept, gap)
            taken.add(gap)
    return kept


def resumed_streams(  # noqa: PLR0913 -- keyword inputs: the epoch, its segments and the new layout
    total: int,
    segments: Sequence[Segment],
    world: int,
    workers: int,
    drop_last: bool,
    *,
    locate: Locate = in_span_order,
) -> list[Pieces]:
    """The streams of `world` ranks of `workers` workers reading what `segments` left of an
    epoch of `total` samples; without segments, the epoch from its start. `locate` says where
    the first layout's streams read the samples of their spans."""
    if not segments:
        return first_layout(total, world, workers, drop_last)
    for segment in segments:
        segment.check()
    first = segments[0]
    streams = first_layout(total, first.world, first.workers, drop_last)
    copies = padding_copies(total, first, drop_last, locate)
    layouts = [(s.world, s.workers) for s in segments[1:]] + [(world, workers)]
    for segment, (next_world, next_workers) in zip(segments, layouts, strict=True):
        streams = split(rest(streams, segment, copies), next_world, next_workers, drop_last)
        copies = []
    return streams


def plan_locate(first: Segment, plan_of: Callable[[Stream], StreamPlan]) -> Locate:
    """The `Locate` of the streams of `first`, whose plans `plan_of` makes."""

    def locate(stream: int, offsets: Sequence[int]) -> list[int]:
        rank, worker = divmod(stream, first.streams_per_rank)
        plan = plan_of(Stream(rank, first.world, worker, first.streams_per_rank))
        return reading_offsets(plan, offsets)

    return locate


def reading_offsets(plan: StreamPlan, offsets: Sequence[int]) -> list[int]:
    """Where a stream that reads `plan` reads the samples at `offsets` of its span (each window
    shuffled: the same window, another place in it)."""
    sizes = [sum(c.stop - c.start for c in window) for window in plan.windows]
    ends = list(itertools.accumulate(sizes))
    numbered = dataclasses.replace(plan, rows=None)  # the span's own numbers, unique per window
    windows: dict[int, tuple[Any, Any]] = {}
    found = []
    for offset in offsets:
        w = bisect.bisect_right(ends, offset)
        if w not in windows:
            spans = [np.arange(c.start, c.stop, dtype=np.int64) for c in plan.windows[w]]
            windows[w] = (np.concatenate(spans), numbered.window_samples(w))
        span, reading = windows[w]
        first = ends[w] - sizes[w]
        found.append(first + int(np.flatnonzero(reading == span[offset - first])[0]))
    return found


def resumed_parts(  # noqa: PLR0913 -- keyword inputs: what a resumed epoch is re-planned from
    progress: EpochProgress,
    stream: Stream,
    *,
    total: int,
    drop_last: bool,
    plan_of: Callable[[Stream], StreamPlan],
    skip: int = 0,
) -> list[Part]:
    """What `stream` reads of what `progress`'s segments left of an epoch of `total` samples,
    less its first `skip` samples: runs of the windows of the first layout's streams, whose
    plans `plan_of` makes."""
    first = progress.segments[0]
    plan = functools.cache(plan_of)  # each first-layout stream's plan, made once
    streams = resumed_streams(
        total,
        progress.segments,
        stream.world,
        stream.workers,
        drop_last,
        locate=plan_locate(first, plan),
    )
    pieces = streams[stream.rank * stream.workers + stream.worker]
    per_rank = first.streams_per_rank
    parts: list[Part] = []
    for piece in take(pieces, skip, length(pieces)):
        rank, worker = divmod(piece.stream, per_rank)
        parts += plan(Stream(rank, first.world, worker, per_rank)).parts(piece.start, piece.stop)
    return parts
