"""A target that is a directory: local, or on a file system every machine of the build mounts at
the same path. The shard jobs, local or cluster tasks, write into it directly (temporary names,
then renames); a shard is finished there when its record is."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, SHARDS_DIR, read_manifest

from ..build_dir import node_plan_dir
from ..errors import BuildError
from ..jobs.shard_record import ShardRecord, finished_record
from ..options import BuildOptions, BuildSummary
from .out_dir import OutState, check_out_dir, start_build_dir
from .target import Publisher


def _check_apart(source: Path, out: Path) -> None:
    source, out = source.resolve(), out.resolve()
    if out == source or (source.is_dir() and out.is_relative_to(source)):
        raise BuildError(f"{out}: the output directory must not be inside the source {source}")


def finished_records(out: Path, shards: range) -> dict[int, ShardRecord]:
    """The records of the shards of `shards` that are finished in the directory `out`."""
    found = {}
    for shard in shards:
        record = finished_record(out, shard)
        if record is not None:
            found[shard] = record
    return found


class DirectoryTarget:
    """A directory, which the dataset is assembled in. A node's share plans in a directory of
    its own (`node_plan_dir`)."""

    def __init__(self, out: Path, source: str, options: BuildOptions, staging: Path | None) -> None:
        _check_apart(Path(source), out)
        self._resume, self._share = options.resume, options.node_share
        self.name = str(out)
        self.out_root = out
        if self._share:
            self.plan_root = node_plan_dir(str(out), options.node_rank, staging)
        else:
            self.plan_root = out
        self.task_target = str(out)
        self.storage_options: Mapping[str, Any] = {}
        self.publisher: Publisher | None = None

    def prepare(self, fingerprint: Mapping[str, Any]) -> OutState:
        """The state of the plan's directory; COMPLETE when the dataset is there already."""
        resume = self._resume or self._share
        state = check_out_dir(self.out_root, resume=resume, fingerprint=fingerprint)
        if state is OutState.COMPLETE or not self._share:
            return state
        return check_out_dir(self.plan_root, resume=True, fingerprint=fingerprint)

    def summary(self, seconds: float) -> BuildSummary:
        return BuildSummary.of_manifest(read_manifest(self.out_root / MANIFEST_NAME), seconds)

    def planned(self, fingerprint: Mapping[str, Any]) -> None:
        if self._share:
            start_build_dir(self.out_root, fingerprint)
        (self.out_root / SHARDS_DIR).mkdir(exist_ok=True)

    def finished(self, shards: range) -> dict[int, ShardRecord]:
        return finished_records(self.out_root, shards)

    def drop_plan(self) -> None:
        """Delete a node's own plan (not the output's, which the finish removes)."""
        if self.plan_root != self.out_root:
            shutil.rmtree(self.plan_root)
