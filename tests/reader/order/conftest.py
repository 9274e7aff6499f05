"""A dataset whose every sample is its own class: a batch's labels say which samples it holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastpack.compiler import BuildOptions, build

from ...conftest import jpeg_bytes

SAMPLES = 150


@pytest.fixture(scope="module")
def one_class_per_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("resume")
    source = root / "src"
    for c in range(SAMPLES):
        folder = source / f"c{c:03d}"
        folder.mkdir(parents=True)
        (folder / "a.jpg").write_bytes(jpeg_bytes(12, 12, seed=c))
    build(source, root / "ds", BuildOptions(workers=1, shard_size=40_000, progress=False))
    return root / "ds"
