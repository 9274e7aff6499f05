"""Which column (CSV/TSV) or key (JSONL) of a list file feeds which field of the dataset.

With a build schema, each field's `column` names it: the jpeg field's holds the image path, the
class field's the label (no class field: no label), the others their values.

Without one, `path` and `label` are the image and the label, and every other column or key is a
field named and typed by this rule (columns found in the header, keys in the first
`SURVEY_LINES` lines, typed by their first value there that is neither null nor `[]`; a field
is optional when one of those lines lacks it):

- a name whose last part is a known member extension (`txt`, `json`, `cls`, `npy`, `png`, ...;
  formats/SPEC.md section 2.1) is the field's name, typed by that extension;
- otherwise the field is `<name>.<ext>` typed by its values: CSV cells are text (`.txt`); a
  JSONL string is text (`.txt`), an integer a class (`.cls`), a list of integers class ids
  (`.json`), a number or a list of numbers or lists an ndarray (`.npy`), anything else json
  (`.json`).

Values of png, jpeg and raw fields are file paths relative to the list file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastpack.formats import FastpackError, FieldSpec, Schema, field_type
from fastpack.formats.schema import EXTENSION_TYPES, V1_SCHEMA, FieldType

from ...build_schema import BuildSchema
from ...errors import SourceError

SURVEY_LINES = 1000
PATH_COLUMN, LABEL_COLUMN = "path", "label"


@dataclass(frozen=True)
class ListColumns:
    """The dataset's schema and the column behind each of its fields: `image` the image path's,
    `label` the label's (None: no label field), `fields` every other field with its column."""

    schema: Schema
    image: str
    label: str | None
    fields: tuple[tuple[FieldSpec, str], ...]

    @property
    def label_spec(self) -> FieldSpec | None:
        name = self.schema.label_field
        return self.schema[name] if name is not None else None

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the fields read."""
        label = () if self.label is None else (self.label,)
        return (self.image, *label, *(c for _, c in self.fields))


def from_build_schema(build: BuildSchema, where: str) -> ListColumns:
    """The columns a build schema names."""
    schema = build.schema
    image, label = schema.image_field, schema.label_field
    if image is None:
        raise SourceError(f"{where}: a list file's schema needs a jpeg field (the image path)")
    others = tuple((f.spec, f.column) for f in build.fields if f.spec.name not in (image, label))
    return ListColumns(
        schema=schema,
        image=build.column(image),
        label=build.column(label) if label is not None else None,
        fields=others,
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind_of(value: Any) -> FieldType:
    """The type a JSONL value implies (see the module docstring)."""
    kind: FieldType = "json"
    if isinstance(value, str):
        kind = "text"
    elif _is_int(value):
        kind = "class"
    elif isinstance(value, float):
        kind = "ndarray"
    elif isinstance(value, list) and value and all(_is_int(v) for v in value):
        kind = "class_ids"
    elif isinstance(value, list) and value:
        numbers = all(_is_int(v) or isinstance(v, (float, list)) for v in value)
        kind = "ndarray" if numbers else "json"
    return kind


def _field(column: str, kind: FieldType | None, optional: bool, where: str) -> FieldSpec:
    by_name = EXTENSION_TYPES.get(column.rpartition(".")[2])
    name = column if by_name is not None else f"{column}.{field_type(kind or 'text').extension}"
    try:
        return FieldSpec(name=name, type=by_name or kind or "text", optional=optional)
    except FastpackError as e:
        raise SourceError(
            f"{where}: column {column!r} cannot name a field ({e}); rename it, or give a "
            "schema (--schema) whose field names it as its `column`"
        ) from e


def _columns(fields: list[FieldSpec], columns: list[str], where: str) -> ListColumns:
    try:
        schema = Schema((*V1_SCHEMA.fields, *fields))
    except FastpackError as e:
        raise SourceError(f"{where}: {e}") from e
    return ListColumns(
        schema=schema,
        image=PATH_COLUMN,
        label=LABEL_COLUMN,
        fields=tuple(zip(fields, columns, strict=True)),
    )


def from_header(
    header: Sequence[str], surveyed: Iterable[Sequence[str]], where: str
) -> ListColumns:
    """The fields of a CSV/TSV header's columns beyond `path` and `label`; optional when a
    surveyed row leaves the column empty."""
    extra = [c for c in header if c not in (PATH_COLUMN, LABEL_COLUMN)]
    positions = [header.index(c) for c in extra]
    empty = {
        c
        for row in surveyed
        for c, k in zip(extra, positions, strict=True)
        if k >= len(row) or not row[k].strip()
    }
    fields = [_field(c, None, c in empty, where) for c in extra]
    return _columns(fields, extra, where)


def from_objects(objects: Sequence[Mapping[str, Any]], where: str) -> ListColumns:
    """The fields of the keys beyond `path` and `label` of the first JSONL objects, typed by
    their first value that is neither null nor `[]`; optional when an object lacks the key (or
    holds null)."""
    kinds: dict[str, FieldType | None] = {}
    for item in objects:
        for key, value in item.items():
            if key not in (PATH_COLUMN, LABEL_COLUMN) and kinds.get(key) is None:
                kinds[key] = None if value is None or value == [] else _kind_of(value)
    keys = list(kinds)
    fields = [
        _field(k, kinds[k] or "json", any(item.get(k) is None for item in objects), where)
        for k in keys
    ]
    return _columns(fields, keys, where)
