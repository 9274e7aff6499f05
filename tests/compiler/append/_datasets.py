"""Datasets and sources for the append tests: image folders of real JPEGs, a built dataset,
and every sample of a version read back through its index."""

from __future__ import annotations

import hashlib
from pathlib import Path

from fastpack.formats import DatasetFiles

from tests.conftest import jpeg_bytes


def image_folder(root: Path, classes: dict[str, int], seed: int = 0) -> Path:
    """`root/<class>/<n>.jpg` with `classes[name]` real JPEGs each, of varied sizes."""
    for c, (name, count) in enumerate(sorted(classes.items())):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            size = 24 + (seed * 7 + c * 5 + i * 3) % 40
            data = jpeg_bytes(size, size + 8, seed=seed * 10_000 + c * 100 + i)
            (folder / f"{seed}_{i:03d}.jpg").write_bytes(data)
    return root


def write_folder(root: Path, files: dict[str, bytes]) -> Path:
    """`root` holding `files` (bytes by path relative to it)."""
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def samples(root: Path, version: int | None = None) -> list[tuple[str, str, int, bytes]]:
    """`(key, source, label, image bytes)` of every sample of a version of the dataset."""
    files = DatasetFiles(root, version=version)
    index, found = files.index, []
    image = files.manifest.schema.names[0]
    for i in range(len(files)):
        path = files.shard_path(int(index.shard[i]))
        _shard, offset, size = index.locate(i, image, path.stat().st_size)
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read(size)
        found.append((index.key(i), index.source(i), int(index.label[i]), data))
    return found


def file_states(root: Path) -> dict[str, tuple[str, int]]:
    """SHA-256 and mtime (ns) of every file under `root`, by relative path."""
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
