"""The field types (formats/SPEC.md section 2.1): one module each, one registry.

Every layer asks the registry about a field's type instead of branching on its name: the schema
checks (`validate`), the member codec (`encode`, `decode`), the shard jobs (`encode_all`, a
shard's values at once), list-file cells (`parse_cell`), the reader's batch columns (`batch`),
verify (`check_value`) and the DALI reader (`dali`). A new type is a module that builds a
`FieldTypeDef` and a `register_field_type` call (here for the built-in ones). A type reads the
field it encodes through `Spec` (its name, type, dtype, shape and geometry): the schema asks the
registry about types, and the registry never imports the schema.
"""

from __future__ import annotations

from ..errors import ManifestError
from ._base import Batch, Dali, FieldTypeDef, Spec
from .class_ import CLASS
from .class_ids import CLASS_IDS
from .jpeg import JPEG
from .json_ import JSON
from .ndarray import NDARRAY, NDARRAY_DTYPES
from .png import PNG
from .raw import RAW
from .text import TEXT

_REGISTRY: dict[str, FieldTypeDef] = {}


def register_field_type(definition: FieldTypeDef) -> FieldTypeDef:
    """Add a field type; ValueError if its name is taken."""
    if definition.name in _REGISTRY:
        raise ValueError(f"field type {definition.name!r} is registered already")
    _REGISTRY[definition.name] = definition
    return definition


def unregister_field_type(name: str) -> None:
    """Remove a field type added by `register_field_type` (tests that define one)."""
    del _REGISTRY[name]


def field_type_names() -> tuple[str, ...]:
    """The registered types' names, the built-in ones first."""
    return tuple(_REGISTRY)


def field_type(name: str) -> FieldTypeDef:
    """The registered type `name`; ManifestError naming the known ones if there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ManifestError(f"type {name!r}, expected one of {field_type_names()}") from None


for _builtin in (JPEG, PNG, CLASS, CLASS_IDS, NDARRAY, TEXT, JSON, RAW):
    register_field_type(_builtin)

__all__ = [
    "CLASS",
    "CLASS_IDS",
    "JPEG",
    "JSON",
    "NDARRAY",
    "NDARRAY_DTYPES",
    "PNG",
    "RAW",
    "TEXT",
    "Batch",
    "Dali",
    "FieldTypeDef",
    "Spec",
    "field_type",
    "field_type_names",
    "register_field_type",
    "unregister_field_type",
]
