"""One node's share of the shard jobs, for clusters without a scheduler (SLURM array jobs,
Kubernetes indexed jobs): node `rank` of `num_nodes` builds the shards `s` with
`s % num_nodes == rank`. Every node plans the whole source itself (the plan is deterministic),
in a directory of its own (`build_dir.node_plan_dir`); the shards go to the shared output."""

from __future__ import annotations

from collections.abc import Sequence

from ..jobs.shard_record import ShardRecord
from ..options import BuildOptions, BuildSummary


def node_shards(num_shards: int, options: BuildOptions) -> range:
    """The shards this call builds: all of them, or this node's share."""
    if not options.node_share or options.node_rank is None:
        return range(num_shards)
    return range(options.node_rank, num_shards, options.num_nodes)


def share_note(options: BuildOptions, finished: int, num_shards: int, out: str) -> str:
    """What a node's call says once its share is done."""
    left = num_shards - finished
    if options.node_rank is None:
        return f"{left} of {num_shards} shards are missing; run the build again with --resume"
    if left == 0:
        return (
            f"node {options.node_rank} of {options.num_nodes}: every shard is finished; "
            f"run the build of {out} once more with --resume to write its index and manifest"
        )
    return (
        f"node {options.node_rank} of {options.num_nodes}: its share is finished; {left} of "
        f"{num_shards} shards are still to come from the other nodes; then run the build "
        "once more with --resume to write the index and manifest"
    )


def share_summary(records: Sequence[ShardRecord], seconds: float, note: str) -> BuildSummary:
    """The summary of a node's share (its shards' records), which leaves the index and manifest
    to a later call."""
    return BuildSummary(
        inputs=sum(r.planned for r in records),
        samples=sum(r.samples for r in records),
        shards=len(records),
        bytes=sum(r.bytes for r in records),
        rejected=sum(len(r.rejects) for r in records),
        converted=sum(r.converted for r in records),
        seconds=seconds,
        notes=(note,),
    )
