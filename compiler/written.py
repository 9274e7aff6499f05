"""What a dataset records of the files the compiler writes: a file's entry in the manifest, and
a line of `rejects.jsonl` (formats/SPEC.md section 2)."""

from __future__ import annotations

import json
from pathlib import Path

from fastpack.formats.checksum import file_sha256
from fastpack.formats.schema import FileInfo


def file_info(path: Path, name: str) -> FileInfo:
    """The manifest's entry of the written file `path`, named `name` (relative to the dataset):
    its size and SHA-256."""
    return FileInfo(name=name, bytes=path.stat().st_size, sha256=file_sha256(path))


def reject_line(path: str, field: str | None, reason: str) -> str:
    """A line of `rejects.jsonl`: the rejected input, the field that rejected it (left out
    where its image did) and why."""
    entry = {"path": path, "reason": reason}
    if field is not None:
        entry = {"path": path, "field": field, "reason": reason}
    return json.dumps(entry, ensure_ascii=False) + "\n"
