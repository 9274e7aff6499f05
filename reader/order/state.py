"""A loader's resumable state: where the current epoch's order has been read to.

The state is a few integers and names: the epoch, the position in the epoch's global order up
to which every rank has read (see `EpochBatchSampler`), and what the order is over (the
dataset's manifest digest, its view, a mix's sources and weights, the seed). No per-sample list,
no rank, worker count or batch size: a state saved by any number of ranks and workers with any
batch size resumes with any other (`Progress`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STATE_FORMAT = "fastpack-loader-state"
STATE_VERSION = 1
_MAX_MESSAGE = 120  # characters of a value quoted in an error message


@dataclass
class Progress:
    """One iteration of a loader: over `epoch` from `start`, `batches` batches per rank of
    `batch_size` on `world_size` ranks, `yielded` of them handed to the trainer so far."""

    epoch: int
    start: int
    batches: int
    batch_size: int
    world_size: int
    length: int  # positions in the epoch's order
    yielded: int = 0

    def position(self) -> int:
        """The position every rank has read to (the order's length once the epoch is done)."""
        if self.yielded >= self.batches:
            return self.length
        return self.start + self.yielded * self.batch_size * self.world_size


def make_state(
    *, identity: Mapping[str, Any], seed: int, shuffle: bool, epoch: int, position: int
) -> dict[str, Any]:
    """The state saved by `state_dict()`: plain JSON values."""
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "order": dict(identity),
        "seed": int(seed),
        "shuffle": bool(shuffle),
        "epoch": int(epoch),
        "position": int(position),
    }


def read_state(  # noqa: PLR0913 (every part of the identity a state is checked against, by keyword)
    state: Mapping[str, Any],
    *,
    identity: Mapping[str, Any],
    seed: int,
    shuffle: bool,
    length: int,
    where: str,
) -> tuple[int, int]:
    """The `(epoch, position)` of a saved `state`, after checking that it was saved over the
    same data, order and seed as this loader reads; a ValueError that says what differs."""
    check_header(state, STATE_FORMAT, STATE_VERSION, "fastpack loader", where)
    saved = state.get("order")
    if saved != dict(identity):
        raise ValueError(
            f"{where}: the state was saved reading {describe(saved)}; this loader reads "
            f"{describe(identity)}: resume with the same dataset, view and mix"
        )
    for name, value in (("seed", seed), ("shuffle", shuffle)):
        if state.get(name) != value:
            raise ValueError(
                f"{where}: the state was saved with {name}={state.get(name)!r}, this loader "
                f"has {name}={value!r}"
            )
    try:
        epoch, position = int(state["epoch"]), int(state["position"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{where}: loader state without a valid epoch and position") from e
    if epoch < 0 or not 0 <= position <= length:
        raise ValueError(
            f"{where}: loader state at epoch {epoch}, position {position}: outside the "
            f"order's {length} positions"
        )
    return epoch, position


def check_header(state: Any, form: str, version: int, kind: str, where: str) -> None:
    """Refuse (ValueError) what is not a state of format `form` at `version`, saved by `kind`."""
    if not isinstance(state, Mapping) or state.get("format") != form:
        raise ValueError(f"{where}: not a {kind} state: {short(state)}")
    if state.get("version") != version:
        raise ValueError(
            f"{where}: {kind} state version {state.get('version')!r}; this version reads {version}"
        )


def describe(identity: Any) -> str:
    """How an error names the data an order reads."""
    if not isinstance(identity, Mapping):
        return repr(identity)
    if "mix" in identity:
        sources = ", ".join(
            f"{describe(s.get('source'))} x {s.get('weight')}" for s in identity["mix"]
        )
        return f"a mix of [{sources}] ({identity.get('epoch_size')} samples per epoch)"
    text = f"dataset {str(identity.get('dataset', '?'))[:12]}"
    view = identity.get("view")
    return f"{text} view {view['name']!r} ({view['digest'][:12]})" if view else f"{text} (no view)"


def short(value: Any) -> str:
    """`repr(value)`, cut to _MAX_MESSAGE characters for an error message."""
    text = repr(value)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."
