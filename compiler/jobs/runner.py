"""Running shard jobs: in this process for one worker, else in a pool of processes.

Workers report progress through two shared counters; the caller's callback gets increments.
A worker whose build process died (kill -9) exits within PARENT_CHECK_SECONDS, busy or idle.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import cv2

from ..errors import BuildError
from ..planning.plan_store import Plan
from .progress import ThrottledProgress
from .shard_job import Progress, ShardJob, run_shard_job
from .shard_record import ShardRecord

REPORT_SECONDS = 0.1
POLL_SECONDS = 0.2
PARENT_CHECK_SECONDS = 0.25
_LOG_SILENT = 0  # cv2.utils.logging.LOG_LEVEL_SILENT: undecodable inputs are rejects, not noise

if TYPE_CHECKING:
    from multiprocessing.sharedctypes import Synchronized

    Counter = Synchronized[int]


@contextmanager
def quiet_single_threaded_cv2() -> Iterator[None]:
    """OpenCV on one thread, its log silent (undecodable inputs are rejects), then as it was."""
    threads, level = cv2.getNumThreads(), cv2.utils.logging.getLogLevel()
    cv2.setNumThreads(1)
    cv2.utils.logging.setLogLevel(_LOG_SILENT)
    try:
        yield
    finally:
        cv2.setNumThreads(threads)
        cv2.utils.logging.setLogLevel(level)


class _SharedProgress(ThrottledProgress):
    """Adds a worker's progress to the shared counters every REPORT_SECONDS."""

    def __init__(self, samples: Counter, nbytes: Counter) -> None:
        super().__init__(REPORT_SECONDS)
        self._counters = (samples, nbytes)

    def send(self, samples: int, nbytes: int) -> None:
        for counter, pending in zip(self._counters, (samples, nbytes), strict=True):
            with counter.get_lock():
                counter.value += pending


def _exit_with_parent(parent: int) -> None:
    """Watch for the build process to go away: an orphaned worker would wait forever."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


_worker: tuple[Plan, _SharedProgress] | None = None


def _init_worker(plan_dir: str, samples: Counter, nbytes: Counter) -> None:
    global _worker  # noqa: PLW0603 - per-process state of a pool worker
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    # OpenCV's thread count is inherited from the parent (set before the fork, see _run_pool):
    # `cv2.setNumThreads` in a forked child can deadlock on the parent's live thread pool.
    cv2.utils.logging.setLogLevel(_LOG_SILENT)
    _worker = (Plan(Path(plan_dir)), _SharedProgress(samples, nbytes))


def _work(job: ShardJob) -> ShardRecord:
    if _worker is None:
        raise RuntimeError("shard worker used before its initializer ran")
    plan, progress = _worker
    try:
        return run_shard_job(job, plan, progress)
    finally:
        progress.flush()


def _run_here(jobs: Sequence[ShardJob], plan_dir: Path, progress: Progress) -> None:
    plan = Plan(plan_dir)
    with quiet_single_threaded_cv2():
        for job in jobs:
            run_shard_job(job, plan, progress)


def _run_pool(jobs: Sequence[ShardJob], plan_dir: Path, workers: int, progress: Progress) -> None:
    context = mp.get_context()
    samples, nbytes = context.Value("q", 0), context.Value("q", 0)
    reported = (0, 0)
    with (
        quiet_single_threaded_cv2(),
        ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(str(plan_dir), samples, nbytes),
        ) as pool,
    ):
        pending: set[Future[ShardRecord]] = {pool.submit(_work, job) for job in jobs}
        try:
            while pending:
                done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()
                now = (samples.value, nbytes.value)
                progress(now[0] - reported[0], now[1] - reported[1])
                reported = now
        except BaseException:
            for future in pending:
                future.cancel()  # jobs already running finish: their shards are kept
            raise


def run_jobs(jobs: Sequence[ShardJob], plan_dir: Path, workers: int, progress: Progress) -> None:
    """Run every job; a job's error (a strict reject) stops the build after the running jobs."""
    if workers == 1 or len(jobs) <= 1:
        _run_here(jobs, plan_dir, progress)
        return
    Plan(plan_dir)  # a damaged plan raises BuildDirError here, not in each worker's initializer
    try:
        _run_pool(jobs, plan_dir, min(workers, len(jobs)), progress)
    except BrokenProcessPool as e:
        raise BuildError(
            "a shard worker process died (killed, or out of memory); finished shards are kept: "
            "run the build again with resume to finish it"
        ) from e
