"""A `StreamingLoader`'s resumable state: how far every rank has read the current epoch.

Plain JSON values, a few integers and names:

    {"format": "fastpack-streaming-state", "version": 1,
     "dataset": <manifest digest>, "dataset_version": 2, "origin": <version 1's digest>,
     "view": null | {"name": ..., "digest": ...},
     "seed": 0, "shuffle": true, "drop_last": false, "shuffle_window": 4,
     "resident_budget": null, "epoch": 3,
     "segments": [[world, workers, batch_size, batches], ...]}

`dataset_version` and `origin` are there from dataset version 2 on (`order.identity`). One
segment per layout that has read part of the epoch, in order (`streaming.elastic`); none: the
epoch has not started. A state resumes with any world size, worker count and batch size;
`resident_budget` (the first layout's resident bytes per rank) fixes that layout's shard order.
Every field is checked before use (`SCHEMA`, `order.schema`): a `LoaderStateError` names the one
that is missing, unknown, of another type or out of range. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import LoaderStateError
from ..order.identity import version_change, with_version
from ..order.schema import Exact, Flag, Integer, Nullable, Record, parse, quote
from ..order.state import DATASET_IDENTITY, check_header
from ..streaming.dataset import StreamingDataset
from ..streaming.elastic import SEGMENTS, EpochProgress, Segment

STATE_FORMAT = "fastpack-streaming-state"
STATE_VERSION = 1
KIND = "StreamingLoader"
SCHEMA = Record(
    {
        "format": Exact(STATE_FORMAT, "the format"),
        "version": Exact(STATE_VERSION, "version"),
        **DATASET_IDENTITY.required,
        "seed": Integer(),
        "shuffle": Flag(),
        "drop_last": Flag(),
        "shuffle_window": Integer(1),
        "resident_budget": Nullable(Integer()),
        "epoch": Integer(),
        "segments": SEGMENTS,
    },
    optional=DATASET_IDENTITY.optional,  # the dataset version, absent in states saved before
)


@dataclass
class StreamingProgress:
    """One iteration of a loader over `epoch`, after the segments of `resumed`, by `world`
    ranks of `workers` workers in batches of `batch_size`; `yielded` batches handed to the
    trainer so far."""

    epoch: int
    resumed: EpochProgress
    world: int
    workers: int
    batch_size: int
    yielded: int = 0

    def progress(self) -> EpochProgress:
        """The epoch's progress now, this iteration's segment last."""
        segment = Segment(self.world, self.workers, self.batch_size, self.yielded)
        return EpochProgress(
            epoch=self.epoch,
            segments=(*self.resumed.segments, segment),
            resident_budget=self.resumed.resident_budget,
        )


def make_state(dataset: StreamingDataset, progress: EpochProgress) -> dict[str, Any]:
    """The state `StreamingLoader.state_dict()` saves."""
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        **_settings(dataset),
        "resident_budget": progress.resident_budget,
        "epoch": progress.epoch,
        "segments": [list(s) for s in progress.segments],
    }


def read_state(dataset: StreamingDataset, state: Mapping[str, Any]) -> EpochProgress:
    """The progress a saved `state` records, after checking every field's type and range
    (`SCHEMA`) and that it was saved reading the same samples in the same order as `dataset`
    reads: a `LoaderStateError` names the field and says what differs."""
    where = str(dataset.path)
    check_header(state, STATE_FORMAT, STATE_VERSION, KIND, where)
    checked = with_version(parse(state, SCHEMA, where=where, kind=KIND))
    change = version_change(checked, with_version(dataset.order_identity()))
    if change is not None:
        raise LoaderStateError(f"{where}: {change}")
    for name, value in _settings(dataset).items():
        if checked.get(name) != value:
            raise LoaderStateError(
                f"{where}: the state was saved with {name}={quote(checked.get(name))}, this "
                f"loader reads {name}={quote(value)}"
            )
    return EpochProgress(
        epoch=checked["epoch"],
        segments=tuple(checked["segments"]),
        resident_budget=checked["resident_budget"],
    )


def _settings(dataset: StreamingDataset) -> dict[str, Any]:
    """What fixes the epoch's order: the samples, the seed and the plan's options."""
    return {
        **dataset.order_identity(),
        "seed": dataset.seed,
        "shuffle": dataset.shuffle,
        "drop_last": dataset.drop_last,
        "shuffle_window": dataset.shuffle_window,
    }
