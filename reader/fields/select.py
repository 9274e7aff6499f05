"""Which fields a reader returns: the ones asked for, checked against the dataset's schema."""

from __future__ import annotations

from collections.abc import Sequence

from fastpack.formats import Schema
from fastpack.formats.schema import IMAGE_TYPE

from ..errors import MissingFieldError


def _missing(where: str, name: str, schema: Schema) -> MissingFieldError:
    return MissingFieldError(f"{where}: no field {name!r}; fields are {schema.names}")


def image_field(schema: Schema, field: str | None, where: str) -> str | None:
    """The field that is the sample's image: `field` when given (a jpeg field of `schema`),
    else the schema's first jpeg field (None if it has none). `where` names the dataset."""
    if field is None:
        return schema.image_field
    if field not in schema:
        raise _missing(where, field, schema)
    kind = schema[field].type
    if kind != IMAGE_TYPE:
        raise ValueError(f"{where}: field {field!r} holds {kind} values; the image is a jpeg field")
    return field


def choose_fields(
    schema: Schema, fields: Sequence[str] | None, image: str | None, where: str
) -> tuple[str, ...]:
    """The names of the fields to return, in order: `fields` when given, else the image and the
    label (those of them the schema has; every field if it has neither)."""
    if fields is None:
        default = tuple(f for f in (image, schema.label_field) if f is not None)
        return default or schema.names
    if isinstance(fields, str):
        raise TypeError(f"{where}: fields is a sequence of field names, got the string {fields!r}")
    names = tuple(fields)
    if not names:
        raise ValueError(f"{where}: fields is empty; the schema's fields are {schema.names}")
    for name in names:
        if name not in schema:
            raise _missing(where, name, schema)
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: fields {names} name a field twice")
    return names
