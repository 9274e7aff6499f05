"""The decode ceiling: JPEG decode + transform of payloads held in memory, no loader.

It is measured with as many processes as the loaders have workers (one for `workers=0`), all
decoding at once: cores shared with hyperthreads, turbo limits and memory bandwidth then count
as they count for the workers, which one process's rate multiplied by the workers would hide.
Each process runs single-threaded OpenCV, as the loaders' workers do.
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastpack.formats import FastpackError
from fastpack.reader import Transform
from fastpack.reader.image.cv2_threads import single_threaded_cv2
from fastpack.reader.image.draws import sample_draws

from .payloads import Payloads
from .timing import Limits, spread

WARMUP_IMAGES = 8  # decoded by each process before its first timed pass
SLACK_S = 60.0  # past the passes' time: a process that sends nothing is stuck


@dataclass(frozen=True, kw_only=True)
class Ceiling:
    processes: int
    payloads: int  # distinct payloads decoded in a loop
    pass_rates: tuple[float, ...]  # images/s of all processes together, per timed pass

    @property
    def images_per_second(self) -> float:
        return statistics.median(self.pass_rates)

    @property
    def per_process(self) -> float:
        return self.images_per_second / self.processes

    @property
    def spread(self) -> float:
        return spread(self.pass_rates)


def measure_ceiling(  # noqa: PLR0913 -- keyword inputs
    payloads: Payloads,
    transform: Transform,
    *,
    processes: int,
    limits: Limits,
    batch_size: int,
    where: str,
) -> Ceiling:
    """Decode `payloads` through `transform` in `processes` processes for `limits.passes`
    passes, each as long as a loader's pass (`seconds`, or `batches` batches of `batch_size`
    per process); `where` names the dataset in errors."""
    most = None if limits.batches is None else limits.batches * batch_size
    linux = sys.platform.startswith("linux")  # fork: no pickling, no re-import
    context = multiprocessing.get_context("fork") if linux else multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    results = context.SimpleQueue()
    job = _Job(
        payloads=payloads,
        transform=transform,
        passes=limits.passes,
        seconds=limits.seconds,
        most=most,
    )
    children = [
        context.Process(target=_decode_loop, args=(job, barrier, results), daemon=True)
        for _ in range(processes)
    ]
    with single_threaded_cv2():
        for child in children:
            child.start()
    try:
        deadline = time.monotonic() + limits.passes * limits.seconds + SLACK_S
        reports = [_receive(results, children, deadline) for _ in children]
    finally:
        for child in children:
            child.join(timeout=5)
            if child.is_alive():
                child.kill()
    for report in reports:
        if isinstance(report, str):
            raise FastpackError(f"{where}: {report}")
    per_pass = zip(*(r for r in reports if r is not None), strict=True)
    rates = tuple(sum(count / seconds for count, seconds in run) for run in per_pass)
    return Ceiling(processes=processes, payloads=len(payloads.data), pass_rates=rates)


def _receive(results: Any, children: list[Any], deadline: float) -> Any:
    while time.monotonic() < deadline:
        if not results.empty():
            return results.get()
        if any(c.exitcode not in (None, 0) for c in children):
            codes = [c.exitcode for c in children]
            raise FastpackError(f"decode ceiling: a process died (exit codes {codes})")
        time.sleep(0.01)
    raise FastpackError("decode ceiling: a process sent no result in time")


@dataclass(frozen=True, kw_only=True)
class _Job:
    """What each process of the ceiling decodes, and for how long."""

    payloads: Payloads
    transform: Transform
    passes: int
    seconds: float
    most: int | None  # images per pass at most


def _decode_loop(job: _Job, barrier: Any, results: Any) -> None:
    """One process of the ceiling: sends `[(images, seconds)] * passes`, an error message, or
    None when another process failed."""
    payloads, transform, most = job.payloads, job.transform, job.most
    count, k = len(payloads.data), 0
    draws = (
        sample_draws(0, 0, payloads.ids, transform.draws).tolist()
        if transform.draws
        else [None] * count
    )
    out = np.empty((*transform.output_shape, 3), np.uint8)
    try:
        for k in range(min(count, WARMUP_IMAGES)):
            transform(payloads.data[k], draws[k], out)
        runs = []
        for _ in range(job.passes):
            barrier.wait()
            images, start = 0, time.perf_counter()
            deadline = start + job.seconds
            while time.perf_counter() < deadline and images != most:
                k = images % count
                transform(payloads.data[k], draws[k], out)
                images += 1
            runs.append((images, time.perf_counter() - start))
    except threading.BrokenBarrierError:
        results.put(None)  # another process failed and says why
        return
    except Exception as e:  # reported to the parent, which raises it
        barrier.abort()
        results.put(f"sample {payloads.ids[k]} does not decode: {e}")
        return
    results.put(runs)
