"""Run one function in several forked processes that start together; time them."""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Sequence
from typing import Any


def _wait_then(start: Any, target: Callable[..., None], args: tuple[Any, ...]) -> None:
    start.wait()
    target(*args)


def timed_fork(target: Callable[..., None], per_process: Sequence[tuple[Any, ...]]) -> float:
    """Seconds from a common start until every `target(*args)` (one process each) returns.

    Set-up before the start (fork, copying the arguments) is not timed."""
    context = mp.get_context("fork")
    start = context.Barrier(len(per_process) + 1)
    workers = [
        context.Process(target=_wait_then, args=(start, target, args)) for args in per_process
    ]
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
    return seconds
