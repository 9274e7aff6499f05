"""The rest of an epoch after a stop, split over another layout (ranks, workers, batch size).

A layout's streams are its ranks' DataLoader workers, rank-major: `world x max(1, workers)`
(`workers=0`: the main process reads, one stream per rank). In one epoch every rank hands out
the same number of batches, and torch's DataLoader takes them from its workers in turn (batch
`i` from worker `i % K`, the workers whose streams have ended left out), so a `Segment`
`(world, workers, batch_size, batches)` tells how many samples each stream has handed out:
no worker needs to report.

What is left of an epoch is each stream's sequence after that count, concatenated in stream
order: `R` samples. The next layout splits them as `plan` splits an epoch: each rank
`ceil(R / world)` samples (wrapping to the start: up to `world - 1` samples read twice) or,
with `drop_last`, `floor(R / world)` (up to `world - 1` left out), each rank's share split
evenly over its workers. Every sequence is a list of `Piece`s of the streams of the epoch's
first layout, so that after any number of segments a stream still reads through the first
layout's plans: shard after shard, each window shuffled as it was.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .plan import Part, Stream, StreamPlan, rank_span, split_span


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


def take(pieces: Sequence[Piece], start: int, stop: int) -> Pieces:
    """Positions `[start, stop)` of the sequence `pieces`, wrapping past its end."""
    total = length(pieces)
    ends = list(itertools.accumulate(p.stop - p.start for p in pieces))
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
    streams = []
    for rank in range(world):
        start, stop = rank_span(total, world, rank, drop_last)
        for worker in range(parts):
            streams.append(take(pieces, *split_span(start, stop, parts, worker)))
    return streams


def rest(streams: Sequence[Pieces], segment: Segment) -> Pieces:
    """What `segment` left of `streams` (its layout's), in stream order."""
    per_rank = segment.streams_per_rank
    left: Pieces = []
    for rank in range(segment.world):
        own = streams[rank * per_rank : (rank + 1) * per_rank]
        lengths = [length(s) for s in own]
        try:
            done = handed_out(lengths, segment.batch_size, segment.batches)
        except ValueError as e:
            raise ValueError(f"segment {list(segment)}: {e}") from e
        for stream, n, count in zip(own, lengths, done, strict=True):
            for piece in take(stream, count, n):
                _append(left, piece)
    return left


def resumed_streams(
    total: int, segments: Sequence[Segment], world: int, workers: int, drop_last: bool
) -> list[Pieces]:
    """The streams of `world` ranks of `workers` workers reading what `segments` left of an
    epoch of `total` samples; without segments, the epoch from its start."""
    if not segments:
        return first_layout(total, world, workers, drop_last)
    for segment in segments:
        segment.check()
    first = segments[0]
    streams = first_layout(total, first.world, first.workers, drop_last)
    layouts = [(s.world, s.workers) for s in segments[1:]] + [(world, workers)]
    for segment, (next_world, next_workers) in zip(segments, layouts, strict=True):
        streams = split(rest(streams, segment), next_world, next_workers, drop_last)
    return streams


def resumed_parts(  # noqa: PLR0913 (keyword-only: what a resumed epoch is re-planned from)
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
    streams = resumed_streams(total, progress.segments, stream.world, stream.workers, drop_last)
    pieces = streams[stream.rank * stream.workers + stream.worker]
    first = progress.segments[0]
    per_rank = first.streams_per_rank
    plans: dict[int, StreamPlan] = {}
    parts: list[Part] = []
    for piece in take(pieces, skip, length(pieces)):
        if piece.stream not in plans:
            rank, worker = divmod(piece.stream, per_rank)
            plans[piece.stream] = plan_of(Stream(rank, first.world, worker, per_rank))
        parts += plans[piece.stream].parts(piece.start, piece.stop)
    return parts
