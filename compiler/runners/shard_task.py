"""One shard job as a self-contained task: the job, its plan rows and where its output goes.

A task needs nothing from the machine that planned it: it carries its rows (`PlanSlice`) and
the dictionaries its fields are compressed with. It does need the source, at the path (or URL)
the plan names, and a target directory at the same path as the client sees it; a machine that
sees neither fails the task (to be retried elsewhere) instead of rejecting every input.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastpack.formats import SHARDS_DIR
from fastpack.storage import is_url

from ..build_dir import BUILD_DIR
from ..jobs.shard_job import Progress, ShardJob, run_shard_job
from ..jobs.shard_record import ShardRecord, finished_record
from ..planning.plan_slice import PlanSlice
from ..targets.store_prefix import StorePrefix


@dataclass(frozen=True)
class ShardTask:
    job: ShardJob  # `out`: the target when it is a directory
    rows: PlanSlice
    target: str  # the output directory (shared file system) or URL
    storage_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskResult:
    record: ShardRecord
    seconds: float  # in the task, including uploads
    input_bytes: int
    skipped: bool  # the shard was already finished
    worker: str = ""  # where it ran (the engine fills it in)


class MachineError(OSError):
    """This machine cannot run the task (the source or the output is not visible here)."""


def _check_visible(task: ShardTask) -> None:
    root = task.rows.meta.root
    host = socket.gethostname()
    if not is_url(root) and not os.path.isdir(root):
        raise MachineError(
            f"{root}: the source is not visible on {host}; every worker must see it at the "
            "path the client planned it with"
        )
    if not is_url(task.target) and not (Path(task.target) / BUILD_DIR).is_dir():
        raise MachineError(
            f"{task.target}: the output directory is not visible on {host}; every worker "
            "must see it at the client's path (a shared file system), or use an object store"
        )


def scratch_dir(root: Path, name: str) -> Path:
    """A fresh private output directory under `root` for one task."""
    out = root / name
    shutil.rmtree(out, ignore_errors=True)
    (out / SHARDS_DIR).mkdir(parents=True)
    (out / BUILD_DIR).mkdir()
    return out


class _Counted:
    """Passes progress on and keeps the input bytes read."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self.bytes = 0

    def __call__(self, samples: int, nbytes: int) -> None:
        self.bytes += nbytes
        self._progress(samples, nbytes)


def run_shard_task(task: ShardTask, scratch: Path, progress: Progress) -> TaskResult:
    """Run `task`, its temporary files under `scratch` where the target is a URL; an already
    finished shard is not rebuilt."""
    started = time.perf_counter()
    _check_visible(task)
    shard, counted = task.job.shard, _Counted(progress)
    if is_url(task.target):
        prefix = StorePrefix(task.target, task.storage_options)
        record = prefix.finished_one(shard)
        if record is None:
            out = scratch_dir(scratch, f"fastpack-shard-{shard:06d}-{uuid.uuid4().hex[:8]}")
            try:
                job = dataclasses.replace(task.job, out=str(out))
                built = run_shard_job(job, task.rows, counted)
                prefix.publish(out, shard)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            return TaskResult(built, time.perf_counter() - started, counted.bytes, False)
    else:
        record = finished_record(Path(task.target), shard)
        if record is None:
            built = run_shard_job(task.job, task.rows, counted)
            return TaskResult(built, time.perf_counter() - started, counted.bytes, False)
    return TaskResult(record, time.perf_counter() - started, 0, True)
