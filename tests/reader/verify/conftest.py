"""The verify tests' datasets published at a URL."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import fsspec
import pytest


@pytest.fixture
def publish() -> Iterator[Callable[[Path], str]]:
    """`publish(root)`: a copy of the dataset at `root` at a new `memory://` URL (removed after)."""
    fs = fsspec.filesystem("memory")
    prefixes: list[str] = []

    def copy(root: Path) -> str:
        prefix = f"/fastpack-{uuid.uuid4().hex[:12]}/ds"
        prefixes.append(prefix)
        for path in root.rglob("*"):
            if path.is_file():
                fs.pipe_file(f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())
        return f"memory:/{prefix}"

    yield copy
    for prefix in prefixes:
        fs.rm(prefix, recursive=True)
