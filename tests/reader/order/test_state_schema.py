"""A loader state is checked field by field before any of it is used: each wrong type, range,
missing or unknown field and version is refused with a LoaderStateError (a ValueError) that
names the field, what was expected and what was found; through `make_loader` over a Dataset and
a Mix, and through `read_state`, which the DALI loader reads states with too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastpack.formats import FastpackError
from fastpack.reader import CenterCrop, Dataset, Mix, make_loader
from fastpack.reader.errors import LoaderStateError
from fastpack.reader.order.state import epoch_limit, make_state, read_state

from .conftest import SAMPLES

DIGEST = "ab" * 32
IDENTITY = {"dataset": DIGEST, "view": None}
LENGTH = 150
WHERE = "/data/ds"


def _state(**changes: Any) -> dict[str, Any]:
    state = make_state(identity=IDENTITY, seed=3, shuffle=True, epoch=2, position=12)
    return {**state, **changes}


def _read(state: Any, identity: dict[str, Any] = IDENTITY, length: int = LENGTH) -> Any:
    return read_state(state, identity=identity, seed=3, shuffle=True, length=length, where=WHERE)


def _field(name: str, expected: str, found: str) -> str:
    """The message of a refused field, as a regular expression."""
    return re.escape(
        f"{WHERE}: fastpack loader state field {name!r}: expected {expected}, found {found}"
    )


EPOCHS = (
    f"an integer in [0, {epoch_limit(LENGTH)}] "
    f"((epoch + 1) x the order's {LENGTH} positions within int64)"
)
POSITIONS = f"an integer in [0, {LENGTH}] (the order's {LENGTH} positions)"


def test_a_state_as_saved_is_read() -> None:
    assert _read(_state()) == (2, 12)
    assert _read(_state(epoch=epoch_limit(LENGTH), position=LENGTH)) == (epoch_limit(LENGTH), 150)


@pytest.mark.parametrize(
    ("changes", "field", "expected", "found"),
    [
        ({"epoch": 2**64}, "epoch", EPOCHS, "18446744073709551616, outside that range"),
        ({"epoch": epoch_limit(LENGTH) + 1}, "epoch", EPOCHS, f"{epoch_limit(150) + 1}, outside"),
        ({"epoch": 0.5}, "epoch", EPOCHS, "0.5 (float)"),
        ({"epoch": -1}, "epoch", EPOCHS, "-1, outside that range"),
        ({"epoch": True}, "epoch", EPOCHS, "True (bool)"),
        ({"position": "12"}, "position", POSITIONS, "'12' (str)"),
        ({"position": 12.5}, "position", POSITIONS, "12.5 (float)"),
        ({"position": 12.0}, "position", POSITIONS, "12.0 (float)"),
        ({"position": None}, "position", POSITIONS, "None (NoneType)"),
        ({"position": LENGTH + 1}, "position", POSITIONS, "151, outside that range"),
        ({"seed": "3"}, "seed", "an integer in [0, 2**63 - 1]", "'3' (str)"),
        ({"shuffle": 1}, "shuffle", "True or False", "1 (int)"),
    ],
)
def test_a_field_of_another_type_or_out_of_range_is_refused(
    changes: dict[str, Any], field: str, expected: str, found: str
) -> None:
    with pytest.raises(LoaderStateError, match=_field(field, expected, found)) as caught:
        _read(_state(**changes))
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, FastpackError)


@pytest.mark.parametrize(
    ("order", "field", "expected", "found"),
    [
        ([], "order", "a mapping of ['dataset', 'view', 'dataset_version', 'origin']", "[] (list)"),
        ({"dataset": 7, "view": None}, "order.dataset", "a non-empty string", "7 (int)"),
        ({"dataset": DIGEST}, "order.view", "None or a mapping of ['name', 'digest']", "missing"),
        ({"dataset": DIGEST, "view": "half"}, "order.view", "None or a mapping", "'half' (str)"),
        (
            {"dataset": DIGEST, "view": {"name": 5, "digest": "d"}},
            "order.view.name",
            "a non-empty string",
            "5 (int)",
        ),
        (
            {"dataset": DIGEST, "view": None, "rows": [1]},
            "order.rows",
            "only the fields ['dataset', 'view', 'dataset_version', 'origin']",
            "an unknown field holding [1]",
        ),
        ({"mix": 5, "epoch_size": 10}, "order.mix", "a list of at most 4096 items", "5 (int)"),
        ({"mix": [], "epoch_size": 0}, "order.epoch_size", "an integer in [1, 2**63 - 1]", "0,"),
        (
            {"mix": [{"source": IDENTITY, "weight": "0.7"}], "epoch_size": 10},
            "order.mix[0].weight",
            "a finite float above 0",
            "'0.7' (str)",
        ),
        (
            {"mix": [{"source": IDENTITY, "weight": float("nan")}], "epoch_size": 10},
            "order.mix[0].weight",
            "a finite float above 0",
            "nan (float)",
        ),
        (
            {"mix": [{"source": {"dataset": DIGEST, "view": 3}, "weight": 1.0}], "epoch_size": 9},
            "order.mix[0].source.view",
            "None or a mapping of ['name', 'digest']",
            "3 (int)",
        ),
        (
            {"mix": [{"weight": 1.0}], "epoch_size": 9},
            "order.mix[0].source",
            "a mapping of ['dataset', 'view', 'dataset_version', 'origin']",
            "nothing: the field is missing",
        ),
    ],
)
def test_a_nested_field_of_another_type_is_refused(
    order: Any, field: str, expected: str, found: str
) -> None:
    message = re.escape(f"field {field!r}: expected {expected}") + ".*" + re.escape(found)
    with pytest.raises(LoaderStateError, match=message):
        _read(_state(order=order))


def test_missing_and_unknown_fields_are_refused() -> None:
    state = _state()
    del state["position"]
    with pytest.raises(
        LoaderStateError, match=_field("position", POSITIONS, "nothing: the field is missing")
    ):
        _read(state)
    fields = "['format', 'version', 'order', 'seed', 'shuffle', 'epoch', 'position']"
    unknown = f"field 'rank': expected only the fields {fields}, found an unknown field holding 0"
    with pytest.raises(LoaderStateError, match=re.escape(unknown)):
        _read(_state(rank=0))


@pytest.mark.parametrize("version", [2, 0, "1", 1.0, True, None])
def test_another_version_is_refused(version: Any) -> None:
    found = f"{version!r} ({type(version).__name__})"
    expected = "expected 1 (the version this reader reads), found "
    with pytest.raises(LoaderStateError, match=re.escape(f"field 'version': {expected}{found}")):
        _read(_state(version=version))


@pytest.mark.parametrize("state", [[1, 2], "state", None, {"epoch": 1}, {"format": "other"}])
def test_what_is_not_a_loader_state_is_refused(state: Any) -> None:
    expected = "expected a mapping whose 'format' is 'fastpack-loader-state'"
    with pytest.raises(
        LoaderStateError, match=re.escape(f"not a fastpack loader state ({expected}")
    ):
        _read(state)


def test_a_mix_epoch_is_bounded_by_its_draws() -> None:
    """A mix numbers each source's draws `epoch * quota + k`: the epoch is bounded so that they
    stay in int64, where a dataset's keyed permutation takes any int64 epoch."""
    mix = {"mix": [{"source": IDENTITY, "weight": 1.0}], "epoch_size": 1000}
    limit = epoch_limit(1000)
    assert (limit + 1) * 1000 <= 2**63 < (limit + 2) * 1000
    assert _read(_state(order=mix, epoch=limit), mix, 1000) == (limit, 12)
    with pytest.raises(LoaderStateError, match=rf"field 'epoch'.*found {limit + 1}, outside"):
        _read(_state(order=mix, epoch=limit + 1), mix, 1000)
    assert epoch_limit(1) == 2**63 - 1


# -- through the loaders ------------------------------------------------------------------------


def test_make_loader_refuses_a_state_field_by_field(one_class_per_sample: Path) -> None:
    dataset = Dataset(one_class_per_sample)
    loader = make_loader(dataset, batch_size=4, num_workers=0)
    state = loader.state_dict()
    where = re.escape(f"{one_class_per_sample}: fastpack loader state field")
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"epoch": 2**64}, "epoch", "18446744073709551616, outside that range"),
        ({"epoch": 0.5}, "epoch", "0.5 (float)"),
        ({"position": "12"}, "position", "'12' (str)"),
        ({"position": 12.5}, "position", "12.5 (float)"),
    ]
    for changes, field, found in cases:
        with pytest.raises(LoaderStateError, match=f"{where} '{field}'.*found {re.escape(found)}"):
            loader.load_state_dict({**state, **changes})
    assert dataset.epoch == 0  # nothing of a refused state was used
    loader.load_state_dict({**state, "epoch": 3, "position": 8})
    assert dataset.epoch == 3
    assert len(loader) == -(-(SAMPLES - 8) // 4)


def test_a_mix_loader_refuses_a_state_field_by_field(one_class_per_sample: Path) -> None:
    a = Dataset(one_class_per_sample, transform=CenterCrop(8))
    mix = Mix(
        [(a, 0.5), (Dataset(one_class_per_sample, transform=CenterCrop(8)), 0.5)], epoch_size=40
    )
    loader = make_loader(mix, batch_size=4, num_workers=0)
    state = loader.state_dict()
    order = {**state["order"], "mix": [*state["order"]["mix"]]}
    order["mix"][1] = {**order["mix"][1], "weight": 1}
    weight = re.escape(
        "field 'order.mix[1].weight': expected a finite float above 0, found 1 (int)"
    )
    with pytest.raises(LoaderStateError, match=weight):
        loader.load_state_dict({**state, "order": order})
    epochs = rf"field 'epoch': expected an integer in \[0, {epoch_limit(40)}\]"
    with pytest.raises(LoaderStateError, match=rf"{epochs}.*found {2**63}, outside that range"):
        loader.load_state_dict({**state, "epoch": 2**63})
    loader.load_state_dict({**state, "epoch": 1, "position": 20})
    assert mix.epoch == 1
    assert len(loader) == 5
