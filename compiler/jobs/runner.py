"""Running shard jobs: in this process for one worker, else in a pool of processes.

Workers report progress through two shared counters; the caller's callback gets increments.
A worker whose build process died (kill -9) exits within PARENT_CHECK_SECONDS, busy or idle.
Each worker also says in a shared table which shard it is writing, so that a worker that dies
(killed, or out of memory) is named in the build's error: its process id, how it ended and the
shard it left unfinished (`WorkerDiedError`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import cv2

from ..errors import WorkerDiedError
from ..planning.plan_store import Plan
from .progress import ThrottledProgress
from .shard_job import Progress, ShardJob, run_shard_job
from .shard_record import ShardRecord

REPORT_SECONDS = 0.1
POLL_SECONDS = 0.2
PARENT_CHECK_SECONDS = 0.25
_LOG_SILENT = 0  # cv2.utils.logging.LOG_LEVEL_SILENT: undecodable inputs are rejects, not noise

_IDLE = -1  # a worker's slot in the shard table between jobs

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess
    from multiprocessing.sharedctypes import Synchronized, SynchronizedArray

    Counter = Synchronized[int]
    Table = SynchronizedArray[int]


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


class _Slot:
    """This worker's row of the shard table: `(pid, shard)` pairs, the shard -1 when idle."""

    def __init__(self, table: Table, claimed: Counter) -> None:
        with claimed.get_lock():
            self._row = claimed.value
            claimed.value += 1
        self._table = table
        if 2 * self._row + 1 < len(table):
            table[2 * self._row], table[2 * self._row + 1] = os.getpid(), _IDLE

    def writing(self, shard: int) -> None:
        if 2 * self._row + 1 < len(self._table):
            self._table[2 * self._row + 1] = shard


_worker: tuple[Plan, _SharedProgress, _Slot] | None = None


def _init_worker(
    plan_dir: str, samples: Counter, nbytes: Counter, table: Table, claimed: Counter
) -> None:
    global _worker  # noqa: PLW0603 -- per process
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    # OpenCV's thread count is inherited from the parent (set before the fork, see _run_pool):
    # `cv2.setNumThreads` in a forked child can deadlock on the parent's live thread pool.
    cv2.utils.logging.setLogLevel(_LOG_SILENT)
    _worker = (Plan(Path(plan_dir)), _SharedProgress(samples, nbytes), _Slot(table, claimed))


def _work(job: ShardJob) -> ShardRecord:
    if _worker is None:
        raise RuntimeError("shard worker used before its initializer ran")
    plan, progress, slot = _worker
    slot.writing(job.shard)
    try:
        return run_shard_job(job, plan, progress)
    finally:
        progress.flush()
        slot.writing(_IDLE)


def _run_here(jobs: Sequence[ShardJob], plan_dir: Path, progress: Progress) -> None:
    plan = Plan(plan_dir)
    with quiet_single_threaded_cv2():
        for job in jobs:
            run_shard_job(job, plan, progress)


def _run_pool(jobs: Sequence[ShardJob], plan_dir: Path, workers: int, progress: Progress) -> None:
    context = mp.get_context()
    samples, nbytes = context.Value("q", 0), context.Value("q", 0)
    table, claimed = context.Array("q", 2 * workers), context.Value("i", 0)
    reported = (0, 0)
    with (
        quiet_single_threaded_cv2(),
        ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(str(plan_dir), samples, nbytes, table, claimed),
        ) as pool,
    ):
        # the pool's own map of its processes (the dict stays after the pool shuts down): how
        # each ended, once one died
        found = getattr(pool, "_processes", None)  # empty until the workers start
        processes: dict[int, BaseProcess] = found if isinstance(found, dict) else {}
        pending: set[Future[ShardRecord]] = {pool.submit(_work, job) for job in jobs}
        try:
            while pending:
                done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()
                now = (samples.value, nbytes.value)
                progress(now[0] - reported[0], now[1] - reported[1])
                reported = now
        except BrokenProcessPool as e:
            shards = _in_flight(table)
            pool.shutdown(wait=True)  # every worker gone: the exit codes are final
            raise WorkerDiedError(_died(processes, shards)) from e
        except BaseException:
            for future in pending:
                future.cancel()  # jobs already running finish: their shards are kept
            raise


def _in_flight(table: Table) -> dict[int, int]:
    """The shard each worker was writing, by process id."""
    values = table[:]
    return {
        pid: shard
        for pid, shard in zip(values[::2], values[1::2], strict=True)
        if pid and shard != _IDLE
    }


def _ending(exitcode: int | None) -> str:
    """How a process ended, in words."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "an unknown signal"
        why = (
            ": on Linux, the kernel's out-of-memory killer sends it"
            if number == signal.SIGKILL
            else ""
        )
        return f"killed by signal {number} ({name}{why})"
    return f"exited with status {exitcode}"


def _died(processes: dict[int, BaseProcess], shards: dict[int, int]) -> str:
    """The error of a pool whose worker died: the dead (not the ones the pool stopped after it,
    by SIGTERM), how each ended and which shard it was writing."""
    ended = {pid: p.exitcode for pid, p in list(processes.items())}
    dead = {pid: code for pid, code in ended.items() if code not in (0, -signal.SIGTERM)}
    named = [
        f"process {pid} {_ending(code)}"
        + (f" while writing shard {shards[pid]}" if pid in shards else "")
        for pid, code in sorted((dead or ended).items())
    ]
    left = sorted(set(shards.values()))
    return (
        f"a shard worker process died: {'; '.join(named) or 'no exit status known'}"
        + (f"; unfinished shards: {', '.join(map(str, left))}" if left else "")
        + "; finished shards are kept: run the build again with resume to finish it"
    )


def run_jobs(jobs: Sequence[ShardJob], plan_dir: Path, workers: int, progress: Progress) -> None:
    """Run every job; a job's error (a strict reject) stops the build after the running jobs;
    a worker that dies stops it with WorkerDiedError, naming the process and its shard."""
    if workers == 1 or len(jobs) <= 1:
        _run_here(jobs, plan_dir, progress)
        return
    Plan(plan_dir)  # a damaged plan raises BuildDirError here, not in each worker's initializer
    _run_pool(jobs, plan_dir, min(workers, len(jobs)), progress)
