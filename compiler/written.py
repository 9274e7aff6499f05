"""What a dataset records of the files the compiler writes: a file's entry in the manifest, a
line of `rejects.jsonl` (formats/SPEC.md section 2), and `index.fpx` from its shards' parts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from fastpack.formats import IndexPart, IndexWriter
from fastpack.formats.checksum import file_sha256
from fastpack.formats.schema import FileInfo


class ShardTotals(Protocol):
    """What the index announces of a shard before its rows: its samples and the bytes of its
    keys and of its sources."""

    @property
    def samples(self) -> int: ...

    @property
    def key_bytes(self) -> int: ...

    @property
    def source_bytes(self) -> int: ...


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


def write_index_file(
    path: Path,
    shards: Sequence[ShardTotals],
    parts: Iterable[IndexPart],
    *,
    fields: Sequence[str],
    version: int,
) -> FileInfo:
    """The index at `path`: the totals of `shards` announced, then `parts` (one per shard, in
    order) appended as they come; its entry in the manifest."""
    with IndexWriter(
        path=path,
        num_samples=sum(s.samples for s in shards),
        num_shards=len(shards),
        fields=fields,
        key_blob_size=sum(s.key_bytes for s in shards),
        source_blob_size=sum(s.source_bytes for s in shards),
        version=version,
    ) as index:
        for part in parts:
            index.append(part)
    return file_info(path, path.name)
