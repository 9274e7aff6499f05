"""The state of one stream of a `StreamingDataset`: what torchdata's `StatefulDataLoader` saves
and restores per DataLoader worker (`StreamingDataset.state_dict`). Plain JSON values:

    {"format": "fastpack-stream-state", "version": 1, "epoch": 3, "position": 120,
     "stream": [rank, world, worker, workers], "seed": 0, "dataset_version": 2,
     "segments": [[world, workers, batch_size, batches], ...], "resident_budget": null}

`position` counts the samples the stream has handed out; `dataset_version` is the version of
the dataset read (formats/SPEC.md section 11), from version 2 on (absent: version 1, as in
states saved before versions existed); `segments` and `resident_budget` are there only in an
epoch resumed on another layout (`elastic`). Every field is checked before use
(`order.schema`); a state that is not this is refused with a `LoaderStateError` naming the
field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..order.schema import Exact, FieldMismatch, Integer, Nullable, Record, parse, quote
from ..order.state import check_header
from .elastic import MAX_STREAMS, SEGMENTS, EpochProgress
from .plan import Stream

STATE_FORMAT = "fastpack-stream-state"
STATE_VERSION = 1
KIND = "StreamingDataset"


@dataclass(frozen=True)
class StreamField:
    """A stream as a state holds it, `[rank, world, worker, workers]`: `rank < world` and
    `worker < workers`, at most `MAX_STREAMS` ranks and workers."""

    expected: str = "a list [rank, world, worker, workers] of integers"

    def __call__(self, value: Any, name: str) -> Stream:
        if not isinstance(value, list | tuple) or len(value) != len(Stream._fields):
            raise FieldMismatch(name, self.expected, quote(value))
        ranks, workers = Integer(1, MAX_STREAMS, "world"), Integer(1, MAX_STREAMS, "workers")
        world, count = ranks(value[1], f"{name}[1]"), workers(value[3], f"{name}[3]")
        rank = Integer(0, world - 1, "rank < world")(value[0], f"{name}[0]")
        worker = Integer(0, count - 1, "worker < workers")(value[2], f"{name}[2]")
        return Stream(rank, world, worker, count)


SCHEMA = Record(
    {
        "format": Exact(STATE_FORMAT, "the format"),
        "version": Exact(STATE_VERSION, "version"),
        "epoch": Integer(),
        "position": Integer(meaning="samples handed out"),
        "stream": StreamField(),
        "seed": Integer(),
    },
    optional={
        "segments": SEGMENTS,
        "resident_budget": Nullable(Integer()),
        "dataset_version": Integer(1),
    },
)


@dataclass(frozen=True, kw_only=True)
class StreamState:
    """A stream's progress: `position` samples of `stream` handed out in `epoch` (of the rest
    that `progress` describes, when it has segments), with `seed`, over version
    `dataset_version` of the dataset."""

    epoch: int
    position: int
    stream: Stream
    seed: int
    progress: EpochProgress
    dataset_version: int = 1


def make_state(state: StreamState) -> dict[str, Any]:
    """The state `StreamingDataset.state_dict()` saves."""
    saved: dict[str, Any] = {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "epoch": state.epoch,
        "position": state.position,
        "stream": list(state.stream),
        "seed": state.seed,
    }
    if state.dataset_version != 1:  # a version-1 state is the state saved before versions
        saved["dataset_version"] = state.dataset_version
    if state.progress.segments:
        saved["segments"] = [list(s) for s in state.progress.segments]
        saved["resident_budget"] = state.progress.resident_budget
    return saved


def read_state(state: Mapping[str, Any], *, where: str) -> StreamState:
    """The progress a saved `state` records, every field checked (`LoaderStateError`)."""
    check_header(state, STATE_FORMAT, STATE_VERSION, KIND, where)
    checked = parse(state, SCHEMA, where=where, kind=KIND)
    progress = EpochProgress(
        epoch=checked["epoch"],
        segments=tuple(checked.get("segments", ())),
        resident_budget=checked.get("resident_budget"),
    )
    return StreamState(
        epoch=checked["epoch"],
        position=checked["position"],
        stream=checked["stream"],
        seed=checked["seed"],
        progress=progress,
        dataset_version=checked.get("dataset_version", 1),
    )
