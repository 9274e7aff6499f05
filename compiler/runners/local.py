"""The `LocalRunner`: the shard jobs in this process, or a pool of processes."""

from __future__ import annotations

from contextlib import nullcontext

from ..stages import run_shards
from .node_share import node_shards
from .run import Run


class LocalRunner:
    """The shard jobs in this process, or a pool of `options.workers` processes; with a node
    share, this node's shards only. They write into the target's local directory, and a target
    assembled in staging publishes each as it is finished."""

    def check(self) -> None:
        """Nothing to check: this machine runs the jobs."""

    def run(self, run: Run) -> tuple[str, ...]:
        shards = node_shards(run.meta.num_shards, run.options)
        todo = [s for s in shards if s not in run.finished]
        done = sum(run.finished[s].planned for s in shards if s in run.finished)
        publisher = run.target.publisher
        with nullcontext() if publisher is None else publisher.publishing(todo):
            run_shards(
                run.target.out_root,
                run.plan_dir,
                meta=run.meta,
                options=run.options,
                schema=run.schema,
                shards=todo,
                done=done,
            )
        return ()
