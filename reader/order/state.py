"""A loader's resumable state: where the current epoch's order has been read to.

The state is a few integers and names: the epoch, the position in the epoch's global order up
to which every rank has read (see `EpochBatchSampler`), and what the order is over (the
dataset's manifest digest and version, its view, a mix's sources and weights, the seed). No
per-sample list, no rank, worker count or batch size: a state saved by any number of ranks and
workers with any batch size resumes with any other (`Progress`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import LoaderStateError
from .identity import version_change, with_version
from .schema import (
    INT64_MAX,
    Exact,
    FieldMismatch,
    Flag,
    Integer,
    Listed,
    Nullable,
    Record,
    Text,
    Weight,
    parse,
    quote,
    typed,
)

STATE_FORMAT = "fastpack-loader-state"
STATE_VERSION = 1
MAX_SOURCES = 4096  # sources of a mix a state may name


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


DATASET_IDENTITY = Record(
    {"dataset": Text(), "view": Nullable(Record({"name": Text(), "digest": Text()}))},
    # states saved before dataset versions name none (`identity.with_version`)
    optional={"dataset_version": Integer(1), "origin": Text()},
)
MIX_IDENTITY = Record(
    {
        "mix": Listed(Record({"source": DATASET_IDENTITY, "weight": Weight()}), most=MAX_SOURCES),
        "epoch_size": Integer(1),
    }
)


@dataclass(frozen=True)
class OrderIdentity:
    """What an order reads: a dataset (and its view) or, given a `mix` field, a mix."""

    expected: str = "a dataset's {'dataset', 'view'} or a mix's {'mix', 'epoch_size'}"

    def __call__(self, value: Any, name: str) -> dict[str, Any]:
        schema = MIX_IDENTITY if isinstance(value, Mapping) and "mix" in value else DATASET_IDENTITY
        checked: dict[str, Any] = schema(value, name)
        return checked


def epoch_limit(length: int) -> int:
    """The last epoch of an order of `length` positions whose draws stay in int64: a group of a
    `QuotaOrder` numbers its draws `epoch * quota + k`, below `(epoch + 1) * length`."""
    return (INT64_MAX + 1) // max(1, length) - 1


def state_schema(length: int) -> Record:
    """Every field of a loader state over an order of `length` positions."""
    return Record(
        {
            "format": Exact(STATE_FORMAT, "the format"),
            "version": Exact(STATE_VERSION, "version"),
            "order": OrderIdentity(),
            "seed": Integer(),
            "shuffle": Flag(),
            "epoch": Integer(
                hi=epoch_limit(length),
                meaning=f"(epoch + 1) x the order's {length} positions within int64",
            ),
            "position": Integer(hi=length, meaning=f"the order's {length} positions"),
        }
    )


def read_state(  # noqa: PLR0913 -- keyword inputs
    state: Mapping[str, Any],
    *,
    identity: Mapping[str, Any],
    seed: int,
    shuffle: bool,
    length: int,
    where: str,
) -> tuple[int, int]:
    """The `(epoch, position)` of a saved `state`, after checking every field's type and range
    (`state_schema`) and that it was saved over the same data, order and seed as this loader
    reads; a `LoaderStateError` that names the field and says what differs."""
    kind = "fastpack loader"
    check_header(state, STATE_FORMAT, STATE_VERSION, kind, where)
    current = with_version(identity)
    _refuse_another_version(state, current, where)  # before the ranges, which it explains
    checked = parse(state, state_schema(length), where=where, kind=kind)
    saved = with_version(checked["order"])
    if saved != current:
        raise LoaderStateError(
            f"{where}: the state was saved reading {describe(saved)}; this loader "
            f"reads {describe(current)}: resume with the same dataset, view and mix"
        )
    for name, value in (("seed", seed), ("shuffle", shuffle)):
        if checked[name] != value:
            raise LoaderStateError(
                f"{where}: the state was saved with {name}={checked[name]!r}, this loader "
                f"has {name}={value!r}"
            )
    return checked["epoch"], checked["position"]


def _refuse_another_version(
    state: Mapping[str, Any], current: Mapping[str, Any], where: str
) -> None:
    """A `LoaderStateError` naming both versions where `state` was saved on another version of
    the dataset (or of a mix's source) than `current` reads; a state whose order is malformed
    is left to the full check."""
    try:
        saved = with_version(OrderIdentity()(state.get("order"), "order"))
    except FieldMismatch:
        return
    change = version_change(saved, current)
    if change is not None:
        raise LoaderStateError(f"{where}: {change}")


def check_header(state: Any, form: str, version: int, kind: str, where: str) -> None:
    """Refuse (`LoaderStateError`) what is not a state of format `form` at `version`, saved by
    `kind`."""
    if not isinstance(state, Mapping) or state.get("format") != form:
        raise LoaderStateError(
            f"{where}: not a {kind} state (expected a mapping whose 'format' is {form!r}): "
            f"{quote(state)}"
        )
    found = state.get("version")
    if type(found) is not int or found != version:
        raise LoaderStateError(
            f"{where}: {kind} state field 'version': expected {version} (the version this "
            f"reader reads), found {typed(found)}"
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
    if identity.get("dataset_version", 1) != 1:
        text += f" version {identity['dataset_version']}"
    view = identity.get("view")
    return f"{text} view {view['name']!r} ({view['digest'][:12]})" if view else f"{text} (no view)"
