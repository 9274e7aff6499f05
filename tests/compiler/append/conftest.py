"""A small built dataset and a source of new inputs, shared by the append tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastpack.compiler import BuildOptions, build

from tests.compiler._helpers import QUIET
from tests.compiler.append._datasets import image_folder


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A dataset of 9 images in 2 classes, built in several shards."""
    ds = tmp_path / "ds"
    source = image_folder(tmp_path / "a", {"cat": 5, "dog": 4})
    build(source, ds, BuildOptions(workers=1, shard_size=4000, max_side=48, **QUIET))
    return ds


@pytest.fixture
def new_inputs(tmp_path: Path) -> Path:
    """6 new images, of an old class and a new one."""
    return image_folder(tmp_path / "b", {"dog": 3, "eel": 3}, seed=1)
