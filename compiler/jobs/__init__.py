"""Shard jobs: a contiguous range of the plan into one tar shard, its DALI index and its index
rows, crash-safe; run in a pool of processes, with progress. Before them, the zstd dictionaries
a schema asks for are trained on the plan (`dictionaries`)."""

from .runner import run_jobs
from .shard_job import ShardJob
from .shard_record import ShardRecord, finished_record, load_record

__all__ = ["ShardJob", "ShardRecord", "finished_record", "load_record", "run_jobs"]
