"""ImageFolder sources: `root/<class>/**/<image>`, walked one directory at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..scan import PlanRow, SourceScan

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff"})


def _visible(entries: Iterator[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
    """Entries not hidden (no leading dot), sorted by name."""
    return sorted((e for e in entries if not e.name.startswith(".")), key=lambda e: e.name)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _size(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat().st_size
    except OSError:  # a broken link: kept, rejected when its job cannot read it
        return 0


def _walk(root: str, relative: str, label: int, seen: set[tuple[int, int]]) -> Iterator[PlanRow]:
    """Images under `root/relative` in name order, depth first; `seen` guards against link loops."""
    directory = os.path.join(root, relative)
    stat = os.stat(directory)
    identity = (stat.st_dev, stat.st_ino)
    if identity in seen:
        return
    seen.add(identity)
    with os.scandir(directory) as it:
        entries = _visible(it)
    for entry in entries:
        path = f"{relative}/{entry.name}"
        if _is_dir(entry):
            yield from _walk(root, path, label, seen)
        elif os.path.splitext(entry.name)[1].lower() in IMAGE_EXTENSIONS:
            yield PlanRow(os.fsencode(path), label, _size(entry))
    seen.discard(identity)


def scan_folder(root: Path) -> SourceScan:
    """Classes are the sorted names of `root`'s subfolders; files directly in `root` are ignored."""
    with os.scandir(root) as it:
        classes = tuple(e.name for e in _visible(it) if _is_dir(e))

    def rows() -> Iterator[PlanRow]:
        for label, name in enumerate(classes):
            yield from _walk(str(root), name, label, set())

    return SourceScan(kind="folder", root=root, rows=rows(), classes=classes)
