"""What `build()` and the runners ask of a target, the place a build's dataset goes.

Every target answers the questions of `Target`. A target that is not a directory the shard jobs
can write into (an object store prefix) is assembled in a local staging directory and adds a
`Publisher`, which brings the shards and then the dataset there; a directory has none, since
the jobs write its files in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from ..jobs.shard_record import ShardRecord
from ..options import BuildSummary
from .out_dir import OutState


class Publisher(Protocol):
    """How a dataset assembled in local staging reaches its target."""

    def publishing(self, shards: Sequence[int]) -> AbstractContextManager[None]:
        """While the local run builds `shards`, publish each one it finishes."""
        ...

    def gather(self, finished: Mapping[int, ShardRecord], shards: range) -> None:
        """Bring every shard's record and index part into staging, for the finish."""
        ...

    def publish(self) -> None:
        """Publish the finished dataset's own files, the manifest last."""
        ...


class Target(Protocol):
    """Where a build's dataset goes, seen from the building call."""

    name: str  # the directory or URL, for messages
    plan_root: Path  # holds the plan (`.fastpack-build/`)
    out_root: Path  # where the dictionaries, records and the finished dataset are assembled
    task_target: str  # where a cluster task writes: a shared directory or the URL
    storage_options: Mapping[str, Any]
    publisher: Publisher | None  # None: the shard jobs write into the target itself

    def prepare(self, fingerprint: Mapping[str, Any]) -> OutState:
        """The state of the plan's directory; COMPLETE when the dataset is there already."""
        ...

    def summary(self, seconds: float) -> BuildSummary:
        """The summary of the dataset that is there already."""
        ...

    def planned(self, fingerprint: Mapping[str, Any]) -> None:
        """The plan is made: ready the target for the shards."""
        ...

    def finished(self, shards: range) -> dict[int, ShardRecord]:
        """The records of the shards of `shards` that are finished at the target."""
        ...

    def drop_plan(self) -> None:
        """This call is done with its plan: delete it where it lies apart from the output."""
        ...
