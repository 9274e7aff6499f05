"""`choose_runner`: who runs a build's shard jobs, chosen once, at the top of `build()`."""

from __future__ import annotations

from typing import Any

from ..errors import BuildError
from ..options import BuildOptions
from .dask_runner import DaskRunner
from .local import LocalRunner
from .run import Runner


def choose_runner(cluster: Any, options: BuildOptions) -> Runner:
    """The `DaskRunner` for a `cluster`, else the `LocalRunner` (for a node share too)."""
    if cluster is None:
        return LocalRunner()
    if options.node_share:
        raise BuildError("a build on a cluster takes no node share (num_nodes, node_rank)")
    return DaskRunner(cluster)
