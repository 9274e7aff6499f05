"""Runners: who runs a build's shard jobs. The `LocalRunner` (this process or a pool of
processes, for one node's share too) or the `DaskRunner` (self-contained shard tasks on a Dask
cluster, which write to the target themselves); `build()` chooses one (`choose_runner`) at its
top. Only `dask_runner` imports Dask, when a build names a cluster."""

from .choose import choose_runner
from .dask_runner import DaskRunner, run_on_dask
from .local import LocalRunner
from .node_share import node_shards
from .run import Run, Runner
from .shard_task import ShardTask, TaskResult, run_shard_task

__all__ = [
    "DaskRunner",
    "LocalRunner",
    "Run",
    "Runner",
    "ShardTask",
    "TaskResult",
    "choose_runner",
    "node_shards",
    "run_on_dask",
    "run_shard_task",
]
