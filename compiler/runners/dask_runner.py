"""The `DaskRunner`: shard tasks on a Dask cluster; the one module of fastpack that imports
`distributed`, and only when a build names a cluster.

The client keeps at most three tasks per worker thread submitted (each carries its plan rows, so
that the scheduler never holds the whole plan), and submits the next as one finishes. A worker
that dies takes its running task with it: the scheduler runs it again elsewhere. A task that
fails on a worker (an error other than a build's own, such as a strict reject) is submitted
again for the other workers, up to `MAX_ATTEMPTS` times. Workers report progress as events on a
topic that the client follows.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fastpack.storage import is_url

from ..errors import BuildError
from ..jobs.dictionaries import load_dictionaries
from ..jobs.progress import BuildProgress, ThrottledProgress
from ..jobs.runner import quiet_single_threaded_cv2
from ..jobs.shard_job import Progress
from ..planning.plan_slice import slice_shard
from ..planning.plan_store import Plan, PlanMeta
from ..stages import shard_job
from .run import Run
from .shard_task import ShardTask, TaskResult, run_shard_task
from .worker_report import worker_lines

MAX_ATTEMPTS = 3
TASKS_PER_THREAD = 3
POLL_SECONDS = 0.05
REPORT_SECONDS = 0.25


def _distributed() -> Any:
    try:
        import distributed  # noqa: PLC0415 -- optional: distributed
    except ImportError as e:
        raise BuildError(
            "a build on a Dask cluster needs dask.distributed: pip install 'fastpack[dask]'"
        ) from e
    return distributed


class TaskFailed(Exception):
    """A task's error on one worker; the client tries the task elsewhere."""

    def __init__(self, worker: str, reason: str) -> None:
        super().__init__(worker, reason)
        self.worker, self.reason = worker, reason

    def __str__(self) -> str:
        return f"on {self.worker}: {self.reason}"


class _Reporter(ThrottledProgress):
    """A task's progress, sent as an event every REPORT_SECONDS."""

    def __init__(self, worker: Any, topic: str, shard: int) -> None:
        super().__init__(REPORT_SECONDS)
        self._worker, self._topic, self._shard = worker, topic, shard

    def send(self, samples: int, nbytes: int) -> None:
        self._worker.log_event(self._topic, [self._shard, samples, nbytes])


def _run_on_worker(task: ShardTask, topic: str) -> TaskResult:
    """The task as a worker runs it."""
    worker = _distributed().get_worker()
    reporter = _Reporter(worker, topic, task.job.shard)
    try:
        # one task per worker thread: OpenCV's own threads would oversubscribe the cores
        with quiet_single_threaded_cv2():
            result = run_shard_task(task, Path(worker.local_directory), reporter)
    except BuildError:
        raise  # the build's own verdict (a strict reject): the same on any worker
    except Exception as e:
        raise TaskFailed(worker.address, f"{type(e).__name__}: {e}") from e
    finally:
        reporter.flush()
    return dataclasses.replace(result, worker=worker.address)


class _Inbox:
    """Progress events from the workers, added up per shard for the client's thread, so that
    a task that failed (or ran twice) can be taken back out of the count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._new = [0, 0]
        self._by_shard: dict[int, int] = {}

    def receive(self, event: tuple[float, Any]) -> None:
        shard, samples, nbytes = event[1]
        with self._lock:
            self._new[0] += samples
            self._new[1] += nbytes
            self._by_shard[shard] = self._by_shard.get(shard, 0) + samples

    def take(self) -> tuple[int, int]:
        with self._lock:
            new = (self._new[0], self._new[1])
            self._new = [0, 0]
        return new

    def settle(self, shard: int, samples: int) -> None:
        """Count shard `shard` as `samples` done, whatever its events said."""
        with self._lock:
            self._new[0] += samples - self._by_shard.get(shard, 0)
            self._by_shard[shard] = samples


class _Submitter:
    def __init__(self, client: Any, topic: str) -> None:
        self._client, self._topic = client, topic
        self.tasks: dict[Any, tuple[ShardTask, int, frozenset[str]]] = {}

    def submit(
        self, task: ShardTask, attempt: int = 1, avoid: frozenset[str] = frozenset()
    ) -> None:
        others = [w for w in self._client.nthreads() if w not in avoid] if avoid else []
        where: dict[str, Any] = {"workers": others, "allow_other_workers": True} if others else {}
        future = self._client.submit(
            _run_on_worker,
            task,
            self._topic,
            pure=False,
            key=f"fastpack-shard-{task.job.shard:06d}-{self._topic[-8:]}-{attempt}",
            **where,
        )
        self.tasks[future] = (task, attempt, avoid)


def _failed(shard: int, attempts: int, error: BaseException) -> BuildError:
    return BuildError(
        f"shard {shard}: its task failed {attempts} times, last {error}; finished shards are "
        "kept: run the build again with resume to finish it"
    )


def _handle(
    future: Any, submitter: _Submitter, inbox: _Inbox, distributed: Any
) -> TaskResult | None:
    """The result of a finished future, or None where its task was submitted again."""
    task, attempt, avoid = submitter.tasks.pop(future)
    shard = task.job.shard
    # A task whose worker died is run again by the scheduler: its future may be back to pending
    # when it is handed over here. `exception()` waits for the end of that run.
    error = None if future.status == "finished" else future.exception()
    if error is None and future.status == "finished":
        result: TaskResult = future.result()
        inbox.settle(shard, result.record.planned)
        return result
    inbox.settle(shard, 0)
    if isinstance(error, TaskFailed):
        if attempt >= MAX_ATTEMPTS:
            raise _failed(shard, attempt, error)
        submitter.submit(task, attempt + 1, avoid | {error.worker})
        return None
    if isinstance(error, distributed.KilledWorker):
        raise BuildError(
            f"shard {shard}: the workers running its task died too often ({error}); finished "
            "shards are kept: run the build again with resume to finish it"
        ) from error
    if error is None:
        raise BuildError(f"shard {shard}: its task was {future.status} by the cluster")
    raise error


def connect(cluster: Any) -> Any:
    """A client of `cluster` (returned as it is when it is one); BuildError naming the address
    when no scheduler answers there."""
    distributed = _distributed()
    if isinstance(cluster, distributed.Client):
        return cluster
    try:
        return distributed.Client(cluster, set_as_default=False)
    except (OSError, ValueError) as e:
        raise BuildError(f"{cluster}: cannot reach a Dask scheduler there ({e})") from e


def check_cluster(cluster: Any) -> None:
    """Fail early, before planning, when `cluster` is an address no scheduler answers at."""
    client = connect(cluster)
    if client is not cluster:
        client.close()


def run_on_dask(
    tasks: Iterable[ShardTask], cluster: Any, progress: Progress
) -> Iterator[TaskResult]:
    """Run `tasks` on `cluster` (a scheduler address or a `distributed.Client`), yielding each
    result as it comes. Stops at the first error that is not retried (pending tasks are
    cancelled; running ones finish and keep their shards)."""
    distributed = _distributed()
    client = connect(cluster)
    own = client is not cluster
    topic = f"fastpack-progress-{uuid.uuid4().hex}"
    inbox = _Inbox()
    client.subscribe_topic(topic, inbox.receive)
    submitter = _Submitter(client, topic)
    try:
        todo = iter(tasks)
        limit = max(1, TASKS_PER_THREAD * sum(client.nthreads().values()))
        for task in todo:
            submitter.submit(task)
            if len(submitter.tasks) >= limit:
                break
        while submitter.tasks:
            # `done()` is a local check: no wait with a timeout, whose TimeoutError would keep
            # the pending futures (and the plan rows of their tasks) alive in a cycle
            for future in [f for f in submitter.tasks if f.done()]:
                result = _handle(future, submitter, inbox, distributed)
                future.release()  # the scheduler forgets the task and its plan rows now
                if result is not None:
                    yield result
                    next_task = next(todo, None)
                    if next_task is not None:
                        submitter.submit(next_task)
            progress(*inbox.take())
            time.sleep(POLL_SECONDS)
        progress(*inbox.take())
    finally:
        if submitter.tasks:
            client.cancel(list(submitter.tasks))
        client.unsubscribe_topic(topic)
        if own:
            client.close()


def _check_reachable(meta: PlanMeta, local: Path) -> None:
    """Refuse a source whose scan copied or spilled data into the client's staging directory
    (remote webdataset or TFRecord files, Parquet, COCO): workers on other machines cannot
    read it there."""
    if is_url(meta.root):
        return
    staging = local.resolve()
    for name in meta.containers:
        if Path(meta.root, name).resolve().is_relative_to(staging):
            raise BuildError(
                f"{staging}: this source's scan keeps data in the staging directory "
                f"({name}), which the cluster's workers cannot read; give --staging (staging=) "
                "a directory on a file system every worker mounts at the same path"
            )


class DaskRunner:
    """The shard jobs as tasks on a Dask cluster (a scheduler address or a
    `distributed.Client`), each carrying its plan rows; they write to the target themselves."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    def check(self) -> None:
        check_cluster(self.cluster)

    def run(self, run: Run) -> tuple[str, ...]:
        target, schema, options = run.target, run.schema, run.options
        if is_url(target.task_target):
            _check_reachable(run.meta, target.plan_root)
        plan = Plan(run.plan_dir)
        out = target.out_root
        dictionaries = load_dictionaries(out, schema) if not schema.is_v1 else None
        job_out = out if is_url(target.task_target) else Path(target.task_target)
        storage_options = dict(target.storage_options)

        def task(shard: int) -> ShardTask:
            job = shard_job(job_out, shard, options, schema)
            job = dataclasses.replace(job, dictionaries=dictionaries)
            return ShardTask(job, slice_shard(plan, shard), target.task_target, storage_options)

        every = range(run.meta.num_shards)
        tasks = (task(shard) for shard in every if shard not in run.finished)
        done = sum(r.planned for r in run.finished.values())
        with BuildProgress(run.meta.num_inputs, done, enabled=options.progress) as progress:
            results = list(run_on_dask(tasks, self.cluster, progress))
        return worker_lines(results)
