"""What a build is asked to store: the fields of its samples and where a source finds each.

A schema file (`fastpack build --schema FILE`) is JSON: a list of field objects, or an object
with that list under `fields` and, optionally, `unnamed` (`"raw"`, the default, or `"drop"`):
what to do with the members of a webdataset sample that no field names. A field object is a
manifest schema entry (formats/SPEC.md section 2.1) with two build-only keys:

- `column`: the list-file column, JSONL key or Parquet column that holds the field's value
  (default: the name's first part: `txt` for `txt.zst`, `seg` for `seg.png`);
- `zstd.dictionary`: `true` to train a zstd dictionary on the field's values, `false` (default)
  for frames without one.

The first jpeg field is the sample's image (its column holds a path, or the image's bytes in
Parquet); the first class field is the label. Example:

    {"fields": [
      {"name": "jpg", "type": "jpeg", "column": "path"},
      {"name": "cls", "type": "class", "column": "label"},
      {"name": "boxes.npy", "type": "ndarray", "dtype": "<f4", "shape": [null, 4],
       "geometry": "boxes"},
      {"name": "txt.zst", "type": "text", "column": "caption",
       "zstd": {"level": 9, "dictionary": true}}
    ]}
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fastpack.formats import FastpackError, FieldSpec, Schema, Zstd
from fastpack.formats.schema import parse_field

from .errors import SourceError

Unnamed = Literal["raw", "drop"]
UNNAMED: tuple[Unnamed, ...] = ("raw", "drop")


@dataclass(frozen=True, kw_only=True)
class FieldSource:
    """One field of a build: its spec (zstd without a dictionary yet), the source column that
    holds its values, and whether to train a zstd dictionary for it."""

    spec: FieldSpec
    column: str
    train_dictionary: bool = False

    def to_json(self) -> dict[str, Any]:
        data = self.spec.to_json()
        data["column"] = self.column
        if self.spec.zstd is not None:
            data["zstd"]["dictionary"] = self.train_dictionary
        return data


@dataclass(frozen=True, kw_only=True)
class BuildSchema:
    fields: tuple[FieldSource, ...]
    unnamed: Unnamed = "raw"

    def __post_init__(self) -> None:
        Schema(tuple(f.spec for f in self.fields))  # names unique, at least one

    @property
    def schema(self) -> Schema:
        """The dataset's schema, before any dictionary is trained."""
        return Schema(tuple(f.spec for f in self.fields))

    def column(self, name: str) -> str:
        return next(f.column for f in self.fields if f.spec.name == name)

    def to_json(self) -> dict[str, Any]:
        """The canonical form (what a resume compares)."""
        return {"fields": [f.to_json() for f in self.fields], "unnamed": self.unnamed}


def default_column(name: str) -> str:
    return name.split(".", 1)[0]


DEFAULT_BUILD_SCHEMA = BuildSchema(
    fields=(
        FieldSource(spec=FieldSpec(name="jpg", type="jpeg"), column="path"),
        FieldSource(spec=FieldSpec(name="cls", type="class"), column="label"),
    )
)


def _field_source(data: Any, where: str) -> FieldSource:
    if not isinstance(data, dict):
        raise SourceError(f"{where}: expected an object, found {type(data).__name__}")
    entry = dict(data)
    column = entry.pop("column", None)
    if column is not None and not isinstance(column, str):
        raise SourceError(f"{where}: 'column' should be a string, found {column!r}")
    train = False
    zstd = entry.get("zstd")
    if isinstance(zstd, dict) and "dictionary" in zstd:
        zstd = dict(zstd)
        train = zstd.pop("dictionary")
        if not isinstance(train, bool):
            raise SourceError(f"{where}: zstd 'dictionary' should be true or false")
        entry["zstd"] = zstd
    try:
        spec = parse_field(entry, where)
    except FastpackError as e:
        raise SourceError(str(e)) from e
    if spec.zstd is None and train:
        raise SourceError(f"{where}: a dictionary needs zstd compression")
    if spec.zstd is not None:
        spec = dataclasses.replace(spec, zstd=Zstd(level=spec.zstd.level))
    return FieldSource(
        spec=spec, column=column or default_column(spec.name), train_dictionary=train
    )


def parse_build_schema(data: Any, where: str) -> BuildSchema:
    """A schema file's decoded JSON as a BuildSchema; SourceError naming `where`."""
    unnamed: Any = "raw"
    if isinstance(data, dict):
        unknown = set(data) - {"fields", "unnamed"}
        if unknown:
            raise SourceError(f"{where}: unknown keys {sorted(unknown)}; known: fields, unnamed")
        unnamed = data.get("unnamed", "raw")
        data = data.get("fields")
    if unnamed not in UNNAMED:
        raise SourceError(f"{where}: 'unnamed' is {unnamed!r}, expected one of {UNNAMED}")
    if not isinstance(data, list) or not data:
        raise SourceError(f"{where}: expected a non-empty list of fields")
    fields = tuple(_field_source(d, f"{where}: field {i}") for i, d in enumerate(data))
    try:
        return BuildSchema(fields=fields, unnamed=unnamed)
    except FastpackError as e:
        raise SourceError(f"{where}: {e}") from e


def read_build_schema(path: str | os.PathLike[str]) -> BuildSchema:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise SourceError(f"{path}: schema file not found") from e
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read the schema file ({e})") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    return parse_build_schema(data, str(path))
