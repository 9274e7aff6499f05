"""The measurement behind the epoch-boundary tests: the trainer's wait for each batch of each
epoch, with a training step that sleeps, and the check that an epoch's first batch waits no
longer than the 99th percentile of the others."""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def epoch_waits(  # noqa: PLR0913 -- keyword inputs
    loader: Any,
    dataset: Any,
    epochs: list[int],
    *,
    batches: int,
    shape: tuple[int, ...],
    step: float,
) -> tuple[list[float], list[float]]:
    """The waits of each epoch's first batch (its `iter()` included), and those of the other
    batches once the workers' prefetch is full (from the fourth batch on): `loader` over
    `dataset`, `dataset.set_epoch(e)` before each epoch `e` of `epochs`, `step` seconds of
    sleep after each batch; every epoch has `batches` batches of images of `shape`."""
    first, others = [], []
    for epoch in epochs:
        dataset.set_epoch(epoch)
        start = time.perf_counter()
        iterator = iter(loader)
        for n in range(batches):
            if n > 0:
                start = time.perf_counter()
            images, _ = next(iterator)
            waited = time.perf_counter() - start
            assert tuple(images.shape) == shape
            if n == 0:
                first.append(waited)
            elif n > 2:  # after the epoch's start: the workers' prefetch is full
                others.append(waited)
            time.sleep(step)  # the training step
        assert next(iterator, None) is None
    return first, others


def assert_first_batches_do_not_wait(
    first: list[float], others: list[float], epochs: list[int], prefetched: int, step: float
) -> None:
    """The median wait of the first batches from epoch `prefetched` on is at most the p99 of
    the others'. The first iteration starts the workers; the later ones' first batches were
    prefetched. Their median: one wait stretched by the other processes of a busy machine does
    not decide."""
    p99 = float(np.percentile(others, 99))
    waits = ", ".join(f"{w * 1e3:.2f}" for w in first)
    assert float(np.median(first[prefetched:])) <= p99, (
        f"the first batches of epochs {epochs} waited {waits} ms, the others' p99 "
        f"{p99 * 1e3:.2f} ms (a step of {step * 1e3:.0f} ms)"
    )
