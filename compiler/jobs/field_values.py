"""A sample's field values as a shard job (or dictionary training) gets them from the plan:
references read, list-file cell text parsed by the field's type."""

from __future__ import annotations

import json
from typing import Any

from fastpack.formats import FieldSpec, FieldValueError

from ..images.policy import Reject
from ..sources.sample_fields import FieldValue, FileRef, InvalidValue, MemberRef
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
    """The value of a CSV/TSV cell for field `spec`: class ids as space-separated integers or a
    JSON list, an ndarray as a JSON (nested) list, json as JSON text; others as they are."""
    kind = spec.type
    if kind == "json":
        return text.encode("utf-8")  # checked (and kept as written) by the json encoder
    if kind == "ndarray" or (kind == "class_ids" and text.lstrip().startswith("[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise FieldValueError(f"not a JSON list ({e.msg} at character {e.pos})") from e
    return text
