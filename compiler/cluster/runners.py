"""Who runs the shard jobs: the `LocalRunner` (this process, or a pool of processes; for a
node's share, that node's shards only) or the `DaskRunner` (tasks on a Dask cluster, which
write to the target themselves). `choose_runner` picks one from `build()`'s arguments."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from fastpack.formats import Schema
from fastpack.storage import is_url

from ..errors import BuildError
from ..jobs.dictionaries import load_dictionaries
from ..jobs.progress import BuildProgress
from ..jobs.shard_record import ShardRecord
from ..options import BuildOptions
from ..planning.plan_store import Plan, PlanMeta
from ..stages import run_shards, shard_job
from .node_share import node_shards
from .outputs import Output
from .worker_report import worker_lines


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run:
    """What a runner needs of the build: its plan, options and schema, where the output goes,
    and the shards already finished there."""

    plan_dir: Path
    meta: PlanMeta
    options: BuildOptions
    schema: Schema
    target: Output
    finished: Mapping[int, ShardRecord]


class Runner(Protocol):
    def check(self) -> None:
        """Fail early, before planning, when the runner cannot run."""

    def run(self, run: Run) -> tuple[str, ...]:
        """Run the jobs of the shards not finished; the lines it adds to the summary."""


class LocalRunner:
    """The shard jobs in this process, or a pool of `options.workers` processes; with a node
    share, this node's shards only. They write into the target's local directory, and the
    target publishes each as it is finished."""

    def check(self) -> None:
        """Nothing to check: this machine runs the jobs."""

    def run(self, run: Run) -> tuple[str, ...]:
        shards = node_shards(run.meta.num_shards, run.options)
        todo = run.target.to_run(shards, run.finished)
        with run.target.publishing(todo):
            run_shards(
                run.target.out_root,
                run.plan_dir,
                meta=run.meta,
                options=run.options,
                schema=run.schema,
                shards=todo,
            )
        return ()


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
        from .dask_runner import check_cluster  # noqa: PLC0415 - an optional extra

        check_cluster(self.cluster)

    def run(self, run: Run) -> tuple[str, ...]:
        from ..planning.plan_slice import slice_shard  # noqa: PLC0415
        from .dask_runner import run_on_dask  # noqa: PLC0415 - an optional extra
        from .shard_task import ShardTask  # noqa: PLC0415

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


def choose_runner(cluster: Any, options: BuildOptions) -> Runner:
    """The `DaskRunner` for a `cluster`, else the `LocalRunner` (for a node share too)."""
    if cluster is None:
        return LocalRunner()
    if options.node_share:
        raise BuildError("a build on a cluster takes no node share (num_nodes, node_rank)")
    return DaskRunner(cluster)
