"""The timed loop of a training run without the training: time to the first batch, then passes
of `next()` calls, each followed by a simulated step, counting images and the time spent
waiting for them."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fastpack.formats import FastpackError

Batch = Sequence[Any]  # (images, labels, ...): the first value holds one row per image


class OpenLoader(Protocol):
    """A loader made for a measurement, and how to release it (its workers, its files)."""

    @property
    def batches(self) -> Iterable[Batch]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Limits:
    """`passes` timed passes of at most `seconds` or `batches` batches each, after `warmup`
    batches (the first included); the loop sleeps `step_ms` after each batch."""

    seconds: float
    batches: int | None
    passes: int
    step_ms: float
    warmup: int


@dataclass(frozen=True, kw_only=True)
class Timing:
    first_batch_seconds: float  # from making the dataset and the loader to the first batch
    pass_rates: tuple[float, ...]  # images/s of each timed pass
    pass_waits: tuple[float, ...]  # share of each pass spent in `next()`
    images: int  # every image read, the warm-up's included

    @property
    def images_per_second(self) -> float:
        return statistics.median(self.pass_rates)

    @property
    def wait_share(self) -> float:
        return statistics.median(self.pass_waits)

    @property
    def spread(self) -> float:
        return spread(self.pass_rates)


def spread(rates: Sequence[float]) -> float:
    """How far apart the passes are: (fastest - slowest) / median."""
    middle = statistics.median(rates)
    return (max(rates) - min(rates)) / middle if middle > 0 else 0.0


def endless(loader: Iterable[Batch], name: str) -> Generator[Batch, None, None]:
    """The batches of `loader`, epoch after epoch."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise FastpackError(f"{name}: the loader yielded no batch in an epoch")


def time_loader(open_loader: Callable[[], OpenLoader], limits: Limits, name: str) -> Timing:
    """Open a loader with `open_loader`, time it as `limits` say, and close it."""
    started = time.perf_counter()
    loader = open_loader()
    batches = endless(loader.batches, name)
    try:
        images = len(next(batches)[0])
        first = time.perf_counter() - started
        for _ in range(limits.warmup - 1):
            images += len(next(batches)[0])
            _step(limits.step_ms)
        rates, waits = [], []
        for _ in range(limits.passes):
            count, seconds, waiting = _timed_pass(batches, limits)
            rates.append(count / seconds)
            waits.append(waiting / seconds)
            images += count
    finally:
        batches.close()  # ends the epoch in progress before the loader goes
        loader.close()
    return Timing(
        first_batch_seconds=first, pass_rates=tuple(rates), pass_waits=tuple(waits), images=images
    )


def _timed_pass(batches: Generator[Batch, None, None], limits: Limits) -> tuple[int, float, float]:
    """(images, seconds, seconds waiting in `next()`) of one pass."""
    images, done, waiting = 0, 0, 0.0
    start = time.perf_counter()
    deadline = start + limits.seconds
    while True:
        before = time.perf_counter()
        batch = next(batches)
        waiting += time.perf_counter() - before
        images += len(batch[0])
        done += 1
        _step(limits.step_ms)
        if time.perf_counter() >= deadline or done == limits.batches:
            return images, time.perf_counter() - start, waiting


def _step(step_ms: float) -> None:
    """The simulated training step: a sleep, which leaves the CPU to the loader (as a step
    that runs on a GPU mostly does)."""
    if step_ms > 0:
        time.sleep(step_ms / 1000)
