"""A loader's state names the dataset version it was saved on: it resumes on that version, is
refused on another naming both, and a state saved before versions existed reads as version 1;
`make_loader(version=N)` and a mix's sources name their versions too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastpack.reader import (
    CenterCrop,
    Dataset,
    LoaderStateError,
    Mix,
    StreamingDataset,
    make_loader,
)

from .conftest import Versioned


def cropped(path: Path, version: int | None = None) -> Dataset:
    """The dataset, its images cropped to one size (so that they batch)."""
    return Dataset(path, version=version, transform=CenterCrop(16))


def streamed(path: Path, version: int | None = None) -> StreamingDataset:
    """The dataset streamed, its images cropped to one size."""
    return StreamingDataset(path, version=version, transform=CenterCrop(16))


def _state(ds: Dataset | Mix, batches: int = 1) -> dict[str, Any]:
    loader = make_loader(ds, batch_size=2, num_workers=0, seed=1)
    iterator = iter(loader)
    for _ in range(batches):
        next(iterator)
    return loader.state_dict()


def test_a_state_resumes_on_its_version_and_is_refused_on_another(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    state = _state(cropped(v.path, version=2))
    assert state["order"]["dataset_version"] == 2
    assert state["order"]["origin"] == cropped(v.path).manifest.versions[0].sha256
    resumed = make_loader(cropped(v.path, version=2), batch_size=2, num_workers=0, seed=1)
    resumed.load_state_dict(state)
    assert sum(len(labels) for _, labels in resumed) == v.samples[1] - 2
    latest = make_loader(cropped(v.path), batch_size=2, num_workers=0, seed=1)
    with pytest.raises(
        LoaderStateError,
        match=r"the state was saved on version 2 of this dataset, this loader reads version 3: "
        r"resume it with the dataset opened at version=2",
    ):
        latest.load_state_dict(state)
    first = make_loader(cropped(v.path, version=1), batch_size=2, num_workers=0, seed=1)
    with pytest.raises(LoaderStateError, match=r"saved on version 2 of this dataset, this loader "):
        first.load_state_dict(state)


def test_a_state_saved_before_versions_loads_on_version_1(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    state = _state(cropped(v.path, version=1))
    # version 1's state is the one saved before dataset versions: it names none
    assert "dataset_version" not in state["order"]
    assert "origin" not in state["order"]
    make_loader(cropped(v.path, version=1), batch_size=2, num_workers=0, seed=1).load_state_dict(
        state
    )
    with pytest.raises(LoaderStateError, match=r"saved on version 1 of this dataset, this loader"):
        make_loader(cropped(v.path), batch_size=2, num_workers=0, seed=1).load_state_dict(state)


def test_another_dataset_is_still_named_so(
    versioned: Callable[..., Versioned],
) -> None:
    a, b = versioned(name="a"), versioned(name="b", seed=1)
    state = _state(cropped(a.path, version=2))
    with pytest.raises(LoaderStateError, match=r"saved reading dataset \w+ version 2 \(no view\)"):
        make_loader(
            cropped(b.path, version=3), batch_size=2, num_workers=0, seed=1
        ).load_state_dict(state)


def test_a_mix_names_the_version_of_each_source(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    mix = Mix(
        [(cropped(v.path, version=1), 1.0), (cropped(v.path, version=3), 1.0)], epoch_size=8, seed=1
    )
    state = _state(mix)
    versions = [s["source"].get("dataset_version", 1) for s in state["order"]["mix"]]
    assert versions == [1, 3]
    other = Mix(
        [(cropped(v.path, version=1), 1.0), (cropped(v.path, version=2), 1.0)], epoch_size=8
    )
    with pytest.raises(LoaderStateError, match=r"mix source 1: the state was saved on version 3"):
        make_loader(other, batch_size=2, num_workers=0).load_state_dict(state)


def test_make_loader_refuses_a_dataset_of_another_version(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    make_loader(cropped(v.path, version=2), batch_size=2, num_workers=0, version=2)
    with pytest.raises(
        ValueError, match=r"make_loader\(version=2\), but the dataset reads version 3"
    ):
        make_loader(cropped(v.path), batch_size=2, num_workers=0, version=2)
    with pytest.raises(ValueError, match=r"StreamingDataset\(path, version=1\)"):
        make_loader(streamed(v.path), batch_size=2, num_workers=0, version=1)
    mix = Mix([(cropped(v.path, version=1), 1.0)], epoch_size=4)
    with pytest.raises(ValueError, match="open each source at its version"):
        make_loader(mix, batch_size=2, num_workers=0, version=1)


def test_a_streaming_loader_state_names_its_version(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    loader = make_loader(streamed(v.path, version=2), batch_size=2, num_workers=0)
    next(iter(loader))
    state = loader.state_dict()
    assert (state["version"], state["dataset_version"]) == (1, 2)  # the state's, the dataset's
    make_loader(streamed(v.path, version=2), batch_size=2, num_workers=0).load_state_dict(state)
    with pytest.raises(LoaderStateError, match=r"saved on version 2 of this dataset, this loader"):
        make_loader(streamed(v.path), batch_size=2, num_workers=0).load_state_dict(state)
