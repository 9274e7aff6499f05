"""A batch's cells as the plan holds them: bytes appended to the spill file (`MemberRef`), file
paths (`FileRef`), or values inline."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..sample_fields import FieldValue, FileRef, MemberRef
from ..spill import SpillFile
from .arrow_types import category_of
from .layout import Column


def _spilled(pa: Any, array: Any, spill: SpillFile) -> list[MemberRef | None]:
    """Each cell's bytes appended to `spill` (one write for the array); None for a null."""
    valid = array.is_valid().to_pylist()
    if not pa.types.is_large_binary(array.type):
        array = array.cast(pa.large_binary())
    _, offsets_buffer, data = array.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[array.offset : array.offset + len(array) + 1]
    start = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    base = spill.add(memoryview(data)[start:end] if data is not None else b"").offset - start
    ends = offsets[1:].tolist()
    return [
        MemberRef(spill.container, base + s, e - s) if ok else None
        for s, e, ok in zip(offsets[:-1].tolist(), ends, valid, strict=True)
    ]


def _byte_cells(pa: Any, array: Any, spill: SpillFile) -> list[MemberRef | FileRef | None]:
    """The cells of a bytes column: spilled; in an image struct, a null `bytes` with a `path` is
    the file at that path."""
    if not pa.types.is_struct(array.type):
        return list(_spilled(pa, array, spill))
    children = array.flatten()  # the struct's nulls applied to its children
    t = array.type
    cells: list[MemberRef | FileRef | None] = list(
        _spilled(pa, children[t.get_field_index("bytes")], spill)
    )
    at = t.get_field_index("path")
    if at >= 0 and category_of(pa, t.field(at).type) == "string":
        paths = children[at].to_pylist()
        cells = [
            c if c is not None or not p else FileRef(p) for c, p in zip(cells, paths, strict=True)
        ]
    return cells


def _inline(array: Any, plain: bool) -> list[Any]:
    values = array.to_pylist()
    if plain:
        return list(values)
    return [None if v is None else json.loads(json.dumps(v, default=str)) for v in values]


def column_cells(pa: Any, column: Column, array: Any, spill: SpillFile) -> Sequence[FieldValue]:
    if column.kind == "bytes":
        return _byte_cells(pa, array, spill)
    if column.kind == "path":
        return [None if p is None else FileRef(p) for p in array.to_pylist()]
    return _inline(array, column.plain)
