"""The worker side of `loader.stats()`: each process's recorder adds the batches it makes to its
row of the loader's counters (`block`), a few clock reads and adds per batch, nothing per sample.

A DataLoader worker installs its recorder as it starts (`RecordingInit`, the loader's worker
init); loading in the training process (`num_workers=0`) installs the loader's own recorder
around each `next()` (`LoaderMeter`). Elsewhere the recorder is idle and records nothing. The
dataset code marks the batches (`records_batches` around `Dataset.__getitems__`,
`recorded_batches` around a stream's batches) and the parts of them that are not decoding
(`timed`: reading, allocating); what is left of a batch's time is decoding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterator, Sequence
from time import perf_counter_ns
from typing import Any, TypeVar

from fastpack.storage.counts import IO_COUNTS

from .batch_rows import batch_rows
from .block import (
    BATCHES,
    BUSY_NS,
    BYTES_FETCHED,
    BYTES_READ,
    CACHE_HITS,
    RETRIES,
    SAMPLES,
    WIDTH,
    CounterBlock,
)
from .counts import READ_COUNTS

T = TypeVar("T")
WorkerInit = Callable[[int], None]

# Whether loaders made from now on collect stats. Internal: benchmarks/readers/stats_bench.py
# turns it off to measure what collecting costs.
COLLECT = True


def _background() -> tuple[int, int, int]:
    """What the process's threads have fetched, found in the cache and retried so far."""
    return IO_COUNTS.fetched_bytes, READ_COUNTS.cache_hits, IO_COUNTS.retries


class Recorder:
    """Adds this process's batches to row `row` of `block`. A batch begun inside another (a
    `Mix` batch's part, read by its source) is part of the outer one."""

    def __init__(self, block: CounterBlock, row: int) -> None:
        self._values = block.values
        self._base = row * WIDTH
        self._depth = 0
        self._start = 0
        self._read_at_start = 0
        self._seen = _background()

    def begin(self) -> None:
        """A batch starts."""
        self._depth += 1
        if self._depth == 1:
            self._start = perf_counter_ns()
            self._read_at_start = READ_COUNTS.bytes_read

    def cancel(self) -> None:
        """The batch begun last failed: it is not counted."""
        self._depth -= 1

    def timed(self, column: int, ns: int) -> None:
        """`ns` nanoseconds of the current batch went to `column` (`block.READ_NS`, ...)."""
        self._values[self._base + column] += ns

    def count(self, column: int) -> None:
        """One more of `column` (`block.FRESH_BLOCKS`)."""
        self._values[self._base + column] += 1

    def end(self, samples: int) -> None:
        """The batch begun last is made: `samples` samples. What the process's threads
        fetched, found in the cache and retried since the last batch is added with it."""
        self._depth -= 1
        if self._depth:
            return
        values, base = self._values, self._base
        values[base + BUSY_NS] += perf_counter_ns() - self._start
        values[base + BATCHES] += 1
        values[base + SAMPLES] += samples
        values[base + BYTES_READ] += READ_COUNTS.bytes_read - self._read_at_start
        now, seen = _background(), self._seen
        values[base + BYTES_FETCHED] += now[0] - seen[0]
        values[base + CACHE_HITS] += now[1] - seen[1]
        values[base + RETRIES] += now[2] - seen[2]
        self._seen = now


class IdleRecorder(Recorder):
    """The recorder of a process that records nothing."""

    def __init__(self) -> None:
        pass

    def begin(self) -> None:
        pass

    def cancel(self) -> None:
        pass

    def timed(self, column: int, ns: int) -> None:
        pass

    def count(self, column: int) -> None:
        pass

    def end(self, samples: int) -> None:
        pass


IDLE = IdleRecorder()
_current: Recorder = IDLE


def current() -> Recorder:
    """This process's recorder (idle unless a loader installed one)."""
    return _current


def install(recorder: Recorder) -> Recorder:
    """Make `recorder` this process's; returns the one it replaces."""
    global _current  # one per process, by design
    previous, _current = _current, recorder
    return previous


class RecordingInit:
    """A DataLoader `worker_init_fn`: installs the worker's recorder of `block` (row: the
    worker's id), then runs `then` (the user's init). `block` None records nothing."""

    def __init__(self, block: CounterBlock | None, then: WorkerInit | None) -> None:
        self.block, self.then = block, then

    def __call__(self, worker_id: int) -> None:
        if self.block is not None:
            install(Recorder(self.block, worker_id))
        if self.then is not None:
            self.then(worker_id)


def records_batches(
    method: Callable[[Any, Sequence[int]], T],
) -> Callable[[Any, Sequence[int]], T]:
    """`__getitems__(self, indices)` recorded as one batch of `len(indices)` samples."""

    @functools.wraps(method)
    def recorded(self: Any, indices: Sequence[int]) -> T:
        recorder = _current
        recorder.begin()
        try:
            batch = method(self, indices)
        except BaseException:
            recorder.cancel()
            raise
        recorder.end(len(indices))
        return batch

    return recorded


def recorded_batches(batches: Iterator[T]) -> Generator[T, None, None]:
    """`batches`, the making of each recorded as one batch (of its first value's rows); a
    generator is closed with this one."""
    try:
        while True:
            recorder = _current
            recorder.begin()
            try:
                batch = next(batches)
            except StopIteration:
                recorder.cancel()
                return
            except BaseException:
                recorder.cancel()
                raise
            recorder.end(batch_rows(batch))
            yield batch
    finally:
        if isinstance(batches, Generator):
            batches.close()
