"""One node's share of the shard jobs, for clusters without a scheduler (SLURM array jobs,
Kubernetes indexed jobs): node `rank` of `num_nodes` builds the shards `s` with
`s % num_nodes == rank`. Every node plans the whole source itself (the plan is deterministic),
in a directory of its own; the shards go to the shared output."""

from __future__ import annotations

import hashlib
from pathlib import Path

from fastpack.storage import default_cache_dir

from ..options import BuildOptions


def node_shards(num_shards: int, options: BuildOptions) -> range:
    """The shards this call builds: all of them, or this node's share."""
    if not options.node_share or options.node_rank is None:
        return range(num_shards)
    return range(options.node_rank, num_shards, options.num_nodes)


def node_plan_dir(out: str, options: BuildOptions, staging: Path | None) -> Path:
    """Where node `rank` keeps its plan: `staging`, else a directory named after the output
    and the rank under `$FASTPACK_CACHE_DIR` (else `~/.cache/fastpack`), so that a resume of
    the same node finds it and two ranks never share one."""
    if staging is not None:
        return staging
    name = hashlib.sha256(out.rstrip("/").encode()).hexdigest()[:16]
    return default_cache_dir() / "plans" / f"{name}-node{options.node_rank}"


def share_note(options: BuildOptions, finished: int, num_shards: int, out: str) -> str:
    """What a node's call says once its share is done."""
    left = num_shards - finished
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
