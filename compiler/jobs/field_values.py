"""A sample's field values as a shard job (or dictionary training) gets them from the plan:
references read, list-file cell text parsed by the field's type."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastpack.formats import FieldSpec, FieldValueError, field_type

from ..images.policy import Reject
from ..sources.sample_fields import FieldValue, FileRef, InvalidValue, MemberRef, unpack_fields
from .inputs import InputReader


def resolve(value: FieldValue, reader: InputReader) -> Any:
    """The value itself, or the bytes a `FileRef` or `MemberRef` points at (FieldValueError
    when they cannot be read, or the scan found the value unusable)."""
    if isinstance(value, InvalidValue):
        raise FieldValueError(value.reason)
    if isinstance(value, FileRef):
        data = reader.read_path(value.path)
        if isinstance(data, Reject):
            raise FieldValueError(f"{value.path}: {data.reason}")
        return data
    if isinstance(value, MemberRef):
        data = reader.read_member(value.container, value.offset, value.size)
        if isinstance(data, Reject):
            raise FieldValueError(data.reason)
        return data
    return value


def parse_cell(spec: FieldSpec, text: str) -> Any:
    """The value of a CSV/TSV cell for field `spec`, by its type's `parse_cell`: class ids as
    space-separated integers or a JSON list, an ndarray as a JSON (nested) list, json as JSON
    text; others as they are."""
    return field_type(spec.type).parse_cell(text)


def unpack_shard(packed: Sequence[bytes]) -> list[dict[str, FieldValue]]:
    """`unpack_fields` of each of a shard's packed rows, the JSON of all parsed in one call: a
    row of inline values only (`{"v": {...}}`) is its `v`; any other by `unpack_fields`."""
    try:
        parsed = json.loads(b"[" + b",".join(p or b"null" for p in packed) + b"]")
    except ValueError:  # a row that is not JSON: each row says for itself
        return [unpack_fields(p) for p in packed]
    rows: list[dict[str, FieldValue]] = []
    for p, row in zip(packed, parsed, strict=True):
        if row is None:
            rows.append({})
        elif len(row) == 1 and type(row.get("v")) is dict:
            rows.append(row["v"])
        else:
            rows.append(unpack_fields(p))
    return rows
