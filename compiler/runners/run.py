"""What every runner is given (`Run`) and what it does with it (`Runner`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from fastpack.formats import Schema

from ..jobs.shard_record import ShardRecord
from ..options import BuildOptions
from ..planning.plan_store import PlanMeta
from ..targets.target import Target


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run:
    """What a runner needs of the build: its plan, options and schema, where the output goes,
    and the shards already finished there."""

    plan_dir: Path
    meta: PlanMeta
    options: BuildOptions
    schema: Schema
    target: Target
    finished: Mapping[int, ShardRecord]


class Runner(Protocol):
    def check(self) -> None:
        """Fail early, before planning, when the runner cannot run."""

    def run(self, run: Run) -> tuple[str, ...]:
        """Run the jobs of the shards not finished; the lines it adds to the summary."""
