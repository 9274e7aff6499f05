"""The trainer side of `loader.stats()`: `LoaderMeter` times the trainer's `next()` calls, counts
the batches and samples they return, and at each `stats()` call takes the difference of these
and of the workers' counters since the previous call."""

from __future__ import annotations

from collections.abc import Iterator
from time import perf_counter_ns
from typing import Any, Generic, TypeVar

import numpy as np

from . import recorder
from .batch_rows import batch_rows
from .block import (
    ALLOCATE_NS,
    BATCHES,
    BUSY_NS,
    BYTES_FETCHED,
    BYTES_READ,
    CACHE_HITS,
    FRESH_BLOCKS,
    READ_NS,
    RETRIES,
    SAMPLES,
    WIDTH,
    CounterBlock,
    Rows,
)
from .loader_stats import LoaderStats, WorkerStats
from .verdict import loader_verdict, usable_cpus

T = TypeVar("T")
_NS = 1e-9


class LoaderMeter:
    """The stats of one loader: `workers` DataLoader workers adding to `block` (0: loading in
    this process, which records into row 0 around each `next()`; None: nothing is counted per
    worker, as for DALI). `collect=False` times and counts nothing (a measurement of what
    collecting costs)."""

    def __init__(
        self, block: CounterBlock | None, workers: int | None, *, collect: bool = True
    ) -> None:
        self.block = block if collect else None
        self.workers = workers
        self.collect = collect
        self._local: recorder.Recorder | None = None
        if self.block is not None and workers == 0:
            self._local = recorder.Recorder(self.block, 0)
        self.batches = self.samples = self.wait_ns = 0
        self._since: int | None = None  # start of the interval: the last stats(), or first next()
        self._last = (0, 0, 0)
        self._last_rows: Rows = np.zeros(
            (0 if self.block is None else self.block.rows, WIDTH), np.int64
        )

    @classmethod
    def for_workers(cls, workers: int) -> LoaderMeter:
        """A meter with a row of counters per worker (one for `workers=0`), made here, before
        the workers start; nothing is collected while `recorder.COLLECT` is off."""
        collect = recorder.COLLECT
        block = CounterBlock(max(workers, 1)) if collect else None
        return cls(block, workers, collect=collect)

    def worker_init(self, then: recorder.WorkerInit | None) -> recorder.RecordingInit:
        """The DataLoader's `worker_init_fn`: installs the worker's recorder, then runs `then`."""
        return recorder.RecordingInit(self.block if self.workers else None, then)

    def next(self, iterator: Iterator[T]) -> T:
        """`next(iterator)`, timed as the trainer's wait, its batch counted."""
        if not self.collect:
            return next(iterator)
        start = perf_counter_ns()
        if self._since is None:
            self._since = start
        local = self._local
        previous = None if local is None else recorder.install(local)
        try:
            batch = next(iterator)
        finally:
            if previous is not None:
                recorder.install(previous)
            self.wait_ns += perf_counter_ns() - start
        self.batches += 1
        self.samples += batch_rows(batch)
        return batch

    def watch(self, iterator: Iterator[T]) -> Watched[T]:
        """`iterator` with each `next()` going through `self.next`."""
        return Watched(iterator, self)

    def stats(self) -> LoaderStats:
        """What happened since the previous call (the first: since the first `next()`)."""
        now = perf_counter_ns()
        seconds = 0.0 if self._since is None else (now - self._since) * _NS
        batches, samples, wait_ns = (
            a - b
            for a, b in zip((self.batches, self.samples, self.wait_ns), self._last, strict=True)
        )
        self._since, self._last = now, (self.batches, self.samples, self.wait_ns)
        workers: tuple[WorkerStats, ...] = ()
        if self.block is not None and self.workers is not None:
            rows = self.block.snapshot()
            workers = tuple(_worker(k, row) for k, row in enumerate(rows - self._last_rows))
            self._last_rows = rows
        wait_share = min(1.0, wait_ns * _NS / seconds) if seconds > 0 else 0.0
        counted = bool(workers)
        in_process = self.workers == 0
        return LoaderStats(
            seconds=seconds,
            batches=batches,
            samples=samples,
            images_per_second=samples / seconds if seconds > 0 else 0.0,
            wait_seconds=wait_ns * _NS,
            wait_share=wait_share,
            in_process=in_process,
            workers=workers,
            bytes_read=sum(w.bytes_read for w in workers) if counted else None,
            bytes_fetched=sum(w.bytes_fetched for w in workers) if counted else None,
            cache_hits=sum(w.cache_hits for w in workers) if counted else None,
            retries=sum(w.retries for w in workers) if counted else None,
            verdict=loader_verdict(
                batches=batches,
                wait_share=wait_share,
                seconds=seconds,
                workers=workers,
                in_process=in_process,
                cpus=usable_cpus(),
            ),
        )


def _worker(k: int, row: Rows) -> WorkerStats:
    values = [int(v) for v in row]
    busy, read, allocate = values[BUSY_NS], values[READ_NS], values[ALLOCATE_NS]
    return WorkerStats(
        worker=k,
        batches=values[BATCHES],
        samples=values[SAMPLES],
        busy_seconds=busy * _NS,
        read_seconds=read * _NS,
        decode_seconds=max(0, busy - read - allocate) * _NS,
        allocate_seconds=allocate * _NS,
        fresh_blocks=values[FRESH_BLOCKS],
        bytes_read=values[BYTES_READ],
        bytes_fetched=values[BYTES_FETCHED],
        cache_hits=values[CACHE_HITS],
        retries=values[RETRIES],
    )


class Watched(Generic[T]):
    """An iterator whose `next()` goes through a `LoaderMeter`; its length and other attributes
    are the wrapped iterator's."""

    def __init__(self, inner: Iterator[T], meter: LoaderMeter) -> None:
        self.inner = inner
        self.meter = meter

    def __iter__(self) -> Watched[T]:
        return self

    def __next__(self) -> T:
        return self.meter.next(self.inner)

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
