"""The sample schema (formats/SPEC.md section 2.1): the fields of every sample, in tar order."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .errors import ManifestError
from .field_types import NDARRAY_DTYPES, field_type, field_type_names

# a field type's name: one of the registry's (formats/field_types/), the built-in ones below
FieldType = str
Geometry = Literal["mask", "boxes"]
FIELD_TYPES: tuple[FieldType, ...] = field_type_names()  # the built-in types
GEOMETRIES: tuple[Geometry, ...] = get_args(Geometry)
COMPRESSIBLE: tuple[FieldType, ...] = tuple(t for t in FIELD_TYPES if field_type(t).compressible)
ZSTD_SUFFIX = ".zst"
DICTIONARY_DIR = "dicts"
MAX_FIELD_NAME = 40
ZSTD_LEVELS = range(-7, 23)
IMAGE_TYPE = "jpeg"  # the type of a sample's image: the first field of it
LABEL_TYPE = "class"  # the type of the label: the first field of it fills the index's labels
_NAME = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*")

# What an extension (the last part of a member name) holds, as webdataset's default decoders read
# it; anything else is raw bytes.
EXTENSION_TYPES: dict[str, FieldType] = {
    "jpg": "jpeg", "jpeg": "jpeg", "png": "png", "cls": "class", "cls2": "class",
    "index": "class", "inx": "class", "id": "class", "npy": "ndarray", "txt": "text",
    "text": "text", "transcript": "text", "json": "json", "jsn": "json",
}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class FileInfo:
    """A file of the dataset: its name (relative to the dataset), size and hex SHA-256."""

    name: str
    bytes: int
    sha256: str


Dictionary = FileInfo  # a zstd dictionary file of the dataset (`dicts/<field>.zdict`)


@dataclass(frozen=True, kw_only=True)
class Zstd:
    """zstd compression of a field's members; `dictionary` None: frames without a dictionary."""

    level: int = 3
    dictionary: Dictionary | None = None


@dataclass(frozen=True, kw_only=True)
class FieldSpec:
    """One field: its member extension `name`, its type and how its members are encoded.

    `dtype` and `shape` constrain an ndarray (None: any; a None dimension, first only: any
    length). `geometry` marks a field that follows the image through crops and flips: a `mask`
    (PNG of the image's size) or `boxes` (ndarray N x 4, x0 y0 x1 y1 in the image's pixels).
    `classes` names the values of a class or class_ids field."""

    name: str
    type: FieldType
    optional: bool = False
    dtype: str | None = None
    shape: tuple[int | None, ...] | None = None
    geometry: Geometry | None = None
    classes: tuple[str, ...] = ()
    zstd: Zstd | None = None

    def __post_init__(self) -> None:
        check_field(self)

    @property
    def fixed_shape(self) -> bool:
        """Whether every value of the field has one shape (known from the schema)."""
        batch = field_type(self.type).batch
        if batch == "scalar":
            return True
        return batch == "shaped" and self.shape is not None and None not in self.shape

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.optional:
            data["optional"] = True
        if self.dtype is not None:
            data["dtype"] = self.dtype
        if self.shape is not None:
            data["shape"] = list(self.shape)
        if self.geometry is not None:
            data["geometry"] = self.geometry
        if self.classes:
            data["classes"] = list(self.classes)
        if self.zstd is not None:
            zstd: dict[str, Any] = {"level": self.zstd.level, "dictionary": None}
            if self.zstd.dictionary is not None:
                d = self.zstd.dictionary
                zstd["dictionary"] = {"name": d.name, "bytes": d.bytes, "sha256": d.sha256}
            data["zstd"] = zstd
        return data


def dictionary_name(field_name: str) -> str:
    """Where the zstd dictionary of field `field_name` lives in a dataset."""
    return f"{DICTIONARY_DIR}/{field_name}.zdict"


def check_field(spec: FieldSpec) -> None:
    """Raise ManifestError unless `spec` follows SPEC section 2.1."""
    where = f"field {spec.name!r}"
    if not _NAME.fullmatch(spec.name) or len(spec.name) > MAX_FIELD_NAME:
        raise ManifestError(
            f"{where}: a field name is 1 to {MAX_FIELD_NAME} characters of [a-z0-9_] in "
            "dot-separated parts (a member extension such as 'jpg', 'seg.png', 'txt.zst')"
        )
    try:
        kind = field_type(spec.type)
    except ManifestError as e:
        raise ManifestError(f"{where}: {e}") from None
    if (spec.dtype is not None or spec.shape is not None) and not kind.shaped:
        raise ManifestError(f"{where}: dtype and shape belong to ndarray fields, not {spec.type}")
    if spec.dtype is not None and spec.dtype not in NDARRAY_DTYPES:
        raise ManifestError(f"{where}: dtype {spec.dtype!r}, expected one of {NDARRAY_DTYPES}")
    if spec.shape is not None:
        if any(d is not None and (not isinstance(d, int) or d < 0) for d in spec.shape):
            raise ManifestError(f"{where}: shape {spec.shape} has a dimension that is not >= 0")
        if None in spec.shape[1:]:
            raise ManifestError(f"{where}: shape {spec.shape}: only the first dimension may vary")
    if spec.geometry is not None:
        _check_geometry(spec, where)
    if spec.classes and not kind.classes:
        raise ManifestError(f"{where}: classes belong to class and class_ids fields")
    _check_zstd(spec, where)


def _check_zstd(spec: FieldSpec, where: str) -> None:
    compressed = spec.name.endswith(ZSTD_SUFFIX)
    if spec.zstd is not None:
        if not field_type(spec.type).compressible:
            raise ManifestError(f"{where}: {spec.type} members are never recompressed")
        if not compressed:
            raise ManifestError(f"{where}: a zstd-compressed field's name ends in {ZSTD_SUFFIX}")
        if spec.zstd.level not in ZSTD_LEVELS:
            raise ManifestError(f"{where}: zstd level {spec.zstd.level}, expected -7..22")
        d = spec.zstd.dictionary
        if d is not None and d.name != dictionary_name(spec.name):
            raise ManifestError(
                f"{where}: dictionary {d.name!r}, expected {dictionary_name(spec.name)!r}"
            )
    elif compressed:
        raise ManifestError(f"{where}: a name ending in {ZSTD_SUFFIX} needs zstd compression")


_GEOMETRY_RULES: dict[str, str] = {
    "mask": "a mask is a png field",
    "boxes": "boxes are an ndarray field of shape (N, 4)",
}


def _check_geometry(spec: FieldSpec, where: str) -> None:
    if spec.geometry not in GEOMETRIES:
        raise ManifestError(f"{where}: geometry {spec.geometry!r}, expected one of {GEOMETRIES}")
    if spec.geometry not in field_type(spec.type).geometries:
        raise ManifestError(f"{where}: {_GEOMETRY_RULES[spec.geometry]}")
    if spec.geometry == "boxes" and spec.shape is not None and spec.shape[1:] != (4,):
        raise ManifestError(f"{where}: {_GEOMETRY_RULES['boxes']}")


@dataclass(frozen=True)
class Schema:
    """The fields of every sample, in tar order; names unique."""

    fields: tuple[FieldSpec, ...]
    _by_name: dict[str, FieldSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, FieldSpec] = {}
        for spec in self.fields:
            if spec.name in by_name:
                raise ManifestError(f"schema: field {spec.name!r} appears twice")
            by_name[spec.name] = spec
        if not by_name:
            raise ManifestError("schema: no fields")
        object.__setattr__(self, "_by_name", by_name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.fields)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> FieldSpec:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no field {name!r}; the schema's fields are {self.names}") from None

    def position(self, name: str) -> int:
        return self.names.index(self[name].name)

    @property
    def image_field(self) -> str | None:
        """The first jpeg field: the sample's image."""
        return next((s.name for s in self.fields if s.type == IMAGE_TYPE), None)

    @property
    def label_field(self) -> str | None:
        """The first class field: its values fill the index's `label` section."""
        return next((s.name for s in self.fields if s.type == LABEL_TYPE), None)

    @property
    def is_v1(self) -> bool:
        """Whether this is the schema every version-1 dataset has: `jpg` (jpeg), `cls` (class)."""
        return self == V1_SCHEMA

    def to_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.fields]


V1_SCHEMA = Schema((FieldSpec(name="jpg", type="jpeg"), FieldSpec(name="cls", type="class")))


def _get(data: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str) -> Any:
    value = data[key]
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise ManifestError(f"{where}: {key!r} should be {expected}, found {value!r}")
    return value


def _parse_zstd(data: Any, where: str) -> Zstd:
    if not isinstance(data, dict) or set(data) - {"level", "dictionary"}:
        raise ManifestError(f"{where}: 'zstd' should be an object with level and dictionary")
    level = _get(data, "level", (int,), where) if "level" in data else 3
    d = data.get("dictionary")
    if d is None:
        return Zstd(level=level)
    if not isinstance(d, dict):
        raise ManifestError(f"{where}: zstd 'dictionary' should be an object or null")
    for key in ("name", "bytes", "sha256"):
        if key not in d:
            raise ManifestError(f"{where}: zstd dictionary misses {key!r}")
    dictionary = Dictionary(
        name=_get(d, "name", (str,), where),
        bytes=_get(d, "bytes", (int,), where),
        sha256=_get(d, "sha256", (str,), where),
    )
    return Zstd(level=level, dictionary=dictionary)


_KEYS = {"name", "type", "optional", "dtype", "shape", "geometry", "classes", "zstd"}


def parse_field(data: Any, where: str) -> FieldSpec:
    """A schema entry (SPEC section 2.1) as a FieldSpec; ManifestError naming `where`."""
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: expected an object, found {type(data).__name__}")
    unknown = set(data) - _KEYS
    if unknown:
        raise ManifestError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_KEYS)}")
    for key in ("name", "type"):
        if key not in data:
            raise ManifestError(f"{where}: missing key {key!r}")
    shape = data.get("shape")
    if shape is not None:
        if not isinstance(shape, list) or any(
            d is not None and (isinstance(d, bool) or not isinstance(d, int)) for d in shape
        ):
            raise ManifestError(f"{where}: 'shape' should be a list of ints and nulls")
        shape = tuple(shape)
    classes = data.get("classes", [])
    if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
        raise ManifestError(f"{where}: 'classes' should be a list of strings")
    try:
        return FieldSpec(
            name=_get(data, "name", (str,), where),
            type=_get(data, "type", (str,), where),
            optional=_get(data, "optional", (bool,), where) if "optional" in data else False,
            dtype=_get(data, "dtype", (str,), where) if data.get("dtype") is not None else None,
            shape=shape,
            geometry=data.get("geometry"),
            classes=tuple(classes),
            zstd=_parse_zstd(data["zstd"], where) if data.get("zstd") is not None else None,
        )
    except ManifestError as e:
        raise ManifestError(f"{where}: {e}") from e


def parse_schema(data: Any, where: str) -> Schema:
    """A manifest's `schema` list as a Schema; ManifestError naming `where`."""
    if not isinstance(data, list):
        raise ManifestError(f"{where}: 'schema' should be a list, found {type(data).__name__}")
    specs = tuple(parse_field(d, f"{where}: schema[{i}]") for i, d in enumerate(data))
    try:
        return Schema(specs)
    except ManifestError as e:
        raise ManifestError(f"{where}: {e}") from e


def type_of_extension(name: str) -> FieldType:
    """The type a member extension implies (webdataset's decoders' reading of its last part)."""
    return EXTENSION_TYPES.get(name.rpartition(".")[2], "raw")
