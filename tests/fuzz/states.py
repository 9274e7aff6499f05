"""The loaders whose `load_state_dict` the state cases call, their valid states, and the
schema each state is judged by (`file_mutators.StateSchema`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastpack.reader import CenterCrop, Dataset, StreamingDataset, make_loader

from .file_mutators import CONST, INT, INTS, NULLABLE_INT, POSITION, SEGMENTS, StateSchema

_IDENTITY = ("order", "dataset", "view", "mix")  # words an identity mismatch names it by


def loaders(root: Path) -> dict[str, Any]:
    """The object each state target loads states into, over the dataset at `root`: a map-style
    loader, a streaming loader and a StreamingDataset (no worker processes)."""
    crop = CenterCrop(16)
    return {
        "state_map": make_loader(Dataset(root, transform=crop), batch_size=2, num_workers=0),
        "state_streaming_loader": make_loader(
            StreamingDataset(root, seed=0, transform=crop), batch_size=2, num_workers=0
        ),
        "state_streaming_dataset": StreamingDataset(root, seed=0, transform=crop),
    }


def valid_states(root: Path) -> dict[str, dict[str, Any]]:
    """A state each target's object saved itself, part-way through an epoch where it can."""
    made = loaders(root)
    for name in ("state_map", "state_streaming_loader"):
        iterator = iter(made[name])
        next(iterator)
        del iterator
    stream = iter(made["state_streaming_dataset"])
    next(stream)
    states = {name: made[name].state_dict() for name in made}
    del stream
    return states


def schemas(root: Path) -> dict[str, StateSchema]:
    length = len(Dataset(root))
    return {
        "state_map": StateSchema(
            {
                "format": CONST,
                "version": CONST,
                "order": CONST,
                "seed": CONST,
                "shuffle": CONST,
                "epoch": INT,
                "position": POSITION,
            },
            aliases={"order": _IDENTITY},
            length=length,
        ),
        "state_streaming_loader": StateSchema(
            {
                "format": CONST,
                "version": CONST,
                "dataset": CONST,
                "view": CONST,
                "seed": CONST,
                "shuffle": CONST,
                "drop_last": CONST,
                "shuffle_window": CONST,
                "resident_budget": NULLABLE_INT,
                "epoch": INT,
                "segments": SEGMENTS,
            },
            length=length,
        ),
        "state_streaming_dataset": StateSchema(
            {
                "epoch": INT,
                "position": INT,
                "stream": INTS,
                "seed": CONST,
                "segments": SEGMENTS,
                "resident_budget": NULLABLE_INT,
            },
            optional=frozenset({"seed", "segments", "resident_budget"}),
            length=length,
        ),
    }
