"""Who runs a build's shard jobs and where their output goes: the runners (`runners`: local
processes, a node's share of the shards, tasks on a Dask cluster) and the targets (`outputs`:
a directory, or an object store prefix through a local staging directory), which `build()`
chooses once, at its top. Only `dask_runner` imports Dask, when a build names a cluster."""

from .dask_runner import run_on_dask
from .node_share import node_plan_dir, node_shards
from .outputs import DirectoryOutput, Output, StoreOutput, open_output
from .runners import DaskRunner, LocalRunner, Run, Runner, choose_runner
from .shard_task import ShardTask, TaskResult, run_shard_task
from .targets import DirectoryTarget, UrlTarget

__all__ = [
    "DaskRunner",
    "DirectoryOutput",
    "DirectoryTarget",
    "LocalRunner",
    "Output",
    "Run",
    "Runner",
    "ShardTask",
    "StoreOutput",
    "TaskResult",
    "UrlTarget",
    "choose_runner",
    "node_plan_dir",
    "node_shards",
    "open_output",
    "run_on_dask",
    "run_shard_task",
]
