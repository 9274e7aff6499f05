"""A sample's field values as a shard job (or dictionary training) gets them from the plan:
references read, list-file cell text parsed by the field's type."""

from __future__ import annotations

from typing import Any

from fastpack.formats import FieldSpec, FieldValueError, field_type

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
    """The value of a CSV/TSV cell for field `spec`, by its type's `parse_cell`: class ids as
    space-separated integers or a JSON list, an ndarray as a JSON (nested) list, json as JSON
    text; others as they are."""
    return field_type(spec.type).parse_cell(text)
