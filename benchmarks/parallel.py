"""Run one function in several forked processes that start together; time them."""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.procmem import cpu_ticks, descendants


def _wait_then(start: Any, target: Callable[..., None], args: tuple[Any, ...]) -> None:
    start.wait()
    target(*args)


def cpu_seconds() -> float:
    """User + system CPU time of this process, of its children that have been waited for, and
    of its live descendants (persistent DataLoader workers), so that a difference of two calls
    counts every process's work in between once."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    live = descendants(os.getpid())[1:]
    total += cpu_ticks(live) / os.sysconf("SC_CLK_TCK")
    return total


def timed_fork(
    target: Callable[..., None], per_process: Sequence[tuple[Any, ...]]
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the processes) from a common start until every
    `target(*args)` (one process each) returns. The CPU time includes each process's set-up
    (fork, copying its arguments), which the wall time leaves out."""
    context = mp.get_context("fork")
    start = context.Barrier(len(per_process) + 1)
    workers = [
        context.Process(target=_wait_then, args=(start, target, args)) for args in per_process
    ]
    cpu = cpu_seconds()
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - began
    codes = [w.exitcode for w in workers]
    if any(code != 0 for code in codes):
        raise RuntimeError(f"{target.__name__}: a process failed, exit codes {codes}")
    return seconds, cpu_seconds() - cpu
