"""Which columns of a Parquet file fill which fields (`Layout`): from the build's schema
(`schema_layout`), else by the columns' names and types (`default_layout`; see `source`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from fastpack.formats import FieldSpec, Schema, field_type
from fastpack.formats.schema import MAX_FIELD_NAME

from ...build_schema import BuildSchema
from ...errors import SourceError
from ..left_out import warn_left_out
from .arrow_types import Category, category_of, holds_bytes, is_bytes_struct, is_plain, leaf_dtype
from .hf_metadata import class_names, hf_features

IMAGE_FIELD, LABEL_FIELD = "jpg", "cls"
IMAGE_COLUMNS = ("image", "img", "jpg", "jpeg", "png")
LABEL_COLUMNS = ("label", "labels")
_NOT_NAME = re.compile(r"[^a-z0-9_]+")

# how a column's cells become values: spilled bytes (or a file, for a null `bytes` of an image
# struct), a file path, or inline
Kind = Literal["bytes", "path", "inline"]


@dataclass(frozen=True)
class Column:
    """A field, the column that fills it, and how its cells become values (`plain`: inline
    values need no conversion to be JSON)."""

    spec: FieldSpec
    column: str
    kind: Kind
    plain: bool = True


@dataclass(frozen=True)
class Layout:
    """The image column, the label column (None: no label field; `text`: labels numbered by a
    LabelTable, else integers, named by `classes`), and the other fields in tar order."""

    image: Column
    label: Column | None
    text_labels: bool
    classes: tuple[str, ...]
    fields: tuple[Column, ...]
    order: tuple[str, ...] = ()  # the fields' names in tar order; () for image, label, fields

    @property
    def columns(self) -> list[str]:
        found = [self.image.column, *([self.label.column] if self.label else [])]
        return list(dict.fromkeys(found + [f.column for f in self.fields]))

    @property
    def schema(self) -> Schema:
        specs = [self.image.spec, *([self.label.spec] if self.label else [])]
        specs += [f.spec for f in self.fields]
        if self.order:
            by_name = {s.name: s for s in specs}
            specs = [by_name[name] for name in self.order]
        return Schema(tuple(specs))


def _field_name(column: str, extension: str) -> str:
    base = _NOT_NAME.sub("_", column.lower()).strip("_") or "column"
    return f"{base[: MAX_FIELD_NAME - len(extension) - 1]}.{extension}"


def _default_field(pa: Any, field: Any, feature: Any, where: str) -> Column | None:
    """A column's field when no schema names it; None (with a warning) for one no field holds."""
    name, t = field.name, field.type
    category, optional = category_of(pa, t), field.nullable
    if category == "bytes":
        return Column(
            FieldSpec(name=_field_name(name, "bin"), type="raw", optional=optional), name, "bytes"
        )
    if holds_bytes(pa, t):
        warn_left_out(
            f"{where}: column {name!r} ({t}) holds bytes inside lists or structs, which no "
            "field holds; it is left out (a schema file can take a binary column as a raw field)"
        )
        return None
    if category == "string":
        return Column(
            FieldSpec(name=_field_name(name, "txt"), type="text", optional=optional), name, "inline"
        )
    if category == "list":
        dtype, shape = leaf_dtype(pa, t)
        value = t.value_type
        if category_of(pa, value) == "int":
            spec = FieldSpec(
                name=_field_name(name, "json"),
                type="class_ids",
                optional=optional,
                classes=class_names(feature),
            )
            return Column(spec, name, "inline")
        if dtype is not None and dtype[1] == "f":
            spec = FieldSpec(
                name=_field_name(name, "npy"),
                type="ndarray",
                optional=optional,
                dtype=dtype,
                shape=shape,
            )
            return Column(spec, name, "inline")
    spec = FieldSpec(name=_field_name(name, "json"), type="json", optional=optional)
    return Column(spec, name, "inline", plain=is_plain(pa, t))


def _default_image(pa: Any, schema: Any, where: str) -> Column:
    for field in schema:
        held = category_of(pa, field.type)
        if field.name.lower() in IMAGE_COLUMNS and held in ("bytes", "string"):
            kind: Kind = "bytes" if held == "bytes" else "path"
            return Column(FieldSpec(name=IMAGE_FIELD, type="jpeg"), field.name, kind)
    for field in schema:
        if is_bytes_struct(pa, field.type):
            return Column(FieldSpec(name=IMAGE_FIELD, type="jpeg"), field.name, "bytes")
    columns = ", ".join(f"{f.name} ({f.type})" for f in schema)
    raise SourceError(
        f"{where}: no image column: expected a column named {', '.join(IMAGE_COLUMNS)} or a "
        f"struct with a binary 'bytes' child; the columns are {columns} (a schema file can name "
        "the image's column)"
    )


def _default_label(pa: Any, schema: Any, features: dict[str, Any]) -> Any:
    """The label column's arrow field, or None."""
    for field in schema:
        if field.name.lower() in LABEL_COLUMNS and category_of(pa, field.type) in ("int", "string"):
            return field
    for field in schema:
        if category_of(pa, field.type) == "int" and class_names(features.get(field.name)):
            return field
    return None


def default_layout(pa: Any, schema: Any, where: str) -> Layout:
    features = hf_features(schema)
    image = _default_image(pa, schema, where)
    label = _default_label(pa, schema, features)
    fields, names = [], {IMAGE_FIELD: image.column, LABEL_FIELD: label.name if label else ""}
    for field in schema:
        if field.name in (image.column, label.name if label else None):
            continue
        found = _default_field(pa, field, features.get(field.name), where)
        if found is None:
            continue
        if found.spec.name in names:
            raise SourceError(
                f"{where}: columns {names[found.spec.name]!r} and {field.name!r} both make field "
                f"{found.spec.name!r}; a schema file can name their fields"
            )
        names[found.spec.name] = field.name
        fields.append(found)
    label_column = None
    if label is not None:
        spec = FieldSpec(name=LABEL_FIELD, type="class")
        label_column = Column(spec, label.name, "inline")
    text = label is not None and category_of(pa, label.type) == "string"
    classes = class_names(features.get(label.name)) if label is not None and not text else ()
    return Layout(image, label_column, text, classes, tuple(fields))


_ACCEPTS: dict[str, tuple[Category, ...]] = {
    "jpeg": ("bytes", "string"), "png": ("bytes", "string"), "raw": ("bytes", "string"),
    "text": ("string", "bytes"), "class": ("int", "string"),
    "class_ids": ("list", "string"), "ndarray": ("list", "int", "float", "bool", "bytes"),
}  # fmt: skip


def _schema_column(pa: Any, spec: FieldSpec, column: str, schema: Any, where: str) -> Column:
    index = schema.get_field_index(column)
    if index < 0:
        raise SourceError(
            f"{where}: no column {column!r} (for field {spec.name!r}); the columns are "
            f"{schema.names}"
        )
    t = schema.field(index).type
    category = category_of(pa, t)
    accepted = _ACCEPTS.get(spec.type)
    if accepted is not None and category not in accepted:
        raise SourceError(
            f"{where}: column {column!r} ({t}) cannot fill the {spec.type} field {spec.name!r}"
        )
    if category == "bytes" or (spec.type == "json" and category == "string"):
        return Column(spec, column, "bytes")  # JSON text: spilled, checked by its encoding
    if category == "string" and field_type(spec.type).file_value:
        return Column(spec, column, "path")
    if spec.type == "json" and holds_bytes(pa, t):
        raise SourceError(f"{where}: column {column!r} ({t}) holds bytes, which JSON cannot")
    return Column(spec, column, "inline", plain=is_plain(pa, t))


def schema_layout(pa: Any, build: BuildSchema, schema: Any, where: str) -> Layout:
    dataset = build.schema
    image, label = dataset.image_field, dataset.label_field
    if image is None:
        raise SourceError(f"schema: no jpeg field for the images; fields: {list(dataset.names)}")
    columns = {
        f.spec.name: _schema_column(pa, f.spec, f.column, schema, where) for f in build.fields
    }
    label_column = columns[label] if label is not None else None
    text = False
    classes: tuple[str, ...] = ()
    if label_column is not None:
        field = schema.field(label_column.column)
        text = category_of(pa, field.type) == "string"
        if not text:
            classes = class_names(hf_features(schema).get(field.name))
    rest = tuple(c for name, c in columns.items() if name not in (image, label))
    return Layout(columns[image], label_column, text, classes, rest, dataset.names)
