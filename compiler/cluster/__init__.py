"""Builds beyond one machine: shard tasks on a Dask cluster, or one node's share of the shard
jobs (`num_nodes`, `node_rank`), written to a shared directory or an object store. Only
`dask_runner` imports Dask, when a build names a cluster."""

from .dask_runner import run_on_dask
from .node_share import node_plan_dir, node_shards
from .shard_task import ShardTask, TaskResult, run_shard_task
from .targets import DirectoryTarget, UrlTarget

__all__ = [
    "DirectoryTarget",
    "ShardTask",
    "TaskResult",
    "UrlTarget",
    "node_plan_dir",
    "node_shards",
    "run_on_dask",
    "run_shard_task",
]
