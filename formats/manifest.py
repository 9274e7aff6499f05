"""`fastpack.json`: the dataset manifest (formats/SPEC.md section 2)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import DatasetNotFoundError, ManifestError, UnsupportedVersionError
from .layout import INDEX_NAME, SHARD_FORMATS
from .schema import V1_SCHEMA, FieldSpec, FileInfo, Schema, parse_schema, type_of_extension

FORMAT_NAME = "fastpack"
VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
DEFAULT_FIELDS = V1_SCHEMA.names


@dataclass(frozen=True, kw_only=True)
class ShardInfo:
    name: str
    index_name: str
    samples: int
    bytes: int
    sha256: str
    crc32c: int | None = None  # OPTIONAL (SPEC 2): what downloads check, cheaper than SHA-256


@dataclass(frozen=True, kw_only=True)
class Manifest:
    num_samples: int
    fields: tuple[str, ...]
    classes: tuple[str, ...]
    key_width: int
    shards: tuple[ShardInfo, ...]
    index: FileInfo
    build: Mapping[str, Any] = field(default_factory=dict)
    stats: Mapping[str, int] = field(default_factory=dict)
    version: int = 1  # `version_for(schema, shard_format)`
    schema: Schema = V1_SCHEMA  # version 1: the schema its `fields` imply
    shard_format: str = "tar"  # or "tfrecord" (version 2 only)

    def __post_init__(self) -> None:
        if self.shard_format not in SHARD_FORMATS:
            raise ManifestError(
                f"manifest: shard_format {self.shard_format!r}, expected one of "
                f"{', '.join(SHARD_FORMATS)}"
            )
        if self.version == 1 and self.shard_format != "tar":
            raise ManifestError("manifest: version 1 has tar shards only; record shards are v2")
        if self.version == 1 and self.schema == V1_SCHEMA and self.fields != V1_SCHEMA.names:
            object.__setattr__(self, "schema", _v1_schema(self.fields))
        if self.version == 1 and self.schema != _v1_schema(tuple(self.fields)):
            raise ManifestError("manifest: version 1 holds no schema but the fields' extensions")
        if self.schema.names != tuple(self.fields):
            raise ManifestError(
                f"manifest: fields {list(self.fields)}, the schema's are {list(self.schema.names)}"
            )

    def to_json(self) -> str:
        """The canonical, byte-stable text of the manifest."""
        data = asdict(self)
        data["format"] = FORMAT_NAME
        if self.version == 1:
            del data["schema"]
        else:
            data["schema"] = self.schema.to_json()
        if self.shard_format == "tar":
            del data["shard_format"]  # tar datasets are byte-identical to those written before it
        for shard in data["shards"]:
            if shard["crc32c"] is None:
                del shard["crc32c"]
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def manifest_digest(manifest: Manifest) -> str:
    """Hex SHA-256 of the manifest's canonical text: the identity of its dataset (views and
    loader states name a dataset by it). Equal to the SHA-256 of `fastpack.json` as
    `write_manifest` writes it."""
    return hashlib.sha256(manifest.to_json().encode("utf-8")).hexdigest()


def version_for(schema: Schema, shard_format: str = "tar") -> int:
    """The version a writer gives a dataset of `schema`: 1 for `jpg` + `cls` in tar shards
    (which every reader reads), else 2."""
    return 1 if schema.is_v1 and shard_format == "tar" else 2


def _v1_schema(fields: tuple[str, ...]) -> Schema:
    """The schema of a version-1 manifest's `fields`: each typed by its extension."""
    try:
        return Schema(tuple(FieldSpec(name=f, type=type_of_extension(f)) for f in fields))
    except ManifestError as e:
        raise ManifestError(f"manifest fields {list(fields)}: {e}") from e


def _require(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data:
        raise ManifestError(f"{where}: missing key {key!r}")
    value = data[key]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        raise ManifestError(
            f"{where}: key {key!r} should be {kind.__name__}, found {type(value).__name__}"
        )
    return value


def _parse_file_info(data: Any, where: str) -> FileInfo:
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: expected an object, found {type(data).__name__}")
    return FileInfo(
        name=_require(data, "name", str, where),
        bytes=_require(data, "bytes", int, where),
        sha256=_require(data, "sha256", str, where),
    )


def _parse_shard(data: Any, where: str) -> ShardInfo:
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: expected an object, found {type(data).__name__}")
    return ShardInfo(
        name=_require(data, "name", str, where),
        index_name=_require(data, "index_name", str, where),
        samples=_require(data, "samples", int, where),
        bytes=_require(data, "bytes", int, where),
        sha256=_require(data, "sha256", str, where),
        crc32c=_optional_crc32c(data, where),
    )


def _optional_crc32c(data: dict[str, Any], where: str) -> int | None:
    value = data.get("crc32c")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32:
        raise ManifestError(
            f"{where}: key 'crc32c' should be an unsigned 32-bit int, found {value!r}"
        )
    return value


_SCHEMA_VERSION = 2  # manifests from this version on hold a `schema`


def parse_manifest(data: Any, source: str) -> Manifest:
    """Validate decoded JSON and build a `Manifest`; `source` names the file in errors."""
    if not isinstance(data, dict):
        raise ManifestError(f"{source}: expected a JSON object, found {type(data).__name__}")
    if data.get("format") != FORMAT_NAME:
        raise ManifestError(f"{source}: 'format' is {data.get('format')!r}, expected 'fastpack'")
    version = _require(data, "version", int, source)
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersionError(
            f"{source}: manifest version {version}, this reader supports {SUPPORTED_VERSIONS}"
        )
    shards = tuple(
        _parse_shard(s, f"{source}: shards[{i}]")
        for i, s in enumerate(_require(data, "shards", list, source))
    )
    fields = tuple(_require(data, "fields", list, source))
    if not all(isinstance(f, str) for f in fields):
        raise ManifestError(f"{source}: 'fields' should be a list of strings")
    if version >= _SCHEMA_VERSION:
        schema = parse_schema(_require(data, "schema", list, source), source)
    else:
        try:
            schema = _v1_schema(fields)
        except ManifestError as e:
            raise ManifestError(f"{source}: {e}") from e
    try:
        manifest = _manifest(
            data, source, version=version, fields=fields, schema=schema, shards=shards
        )
    except ManifestError as e:
        raise ManifestError(f"{source}: {e}") from e
    total = sum(s.samples for s in shards)
    if total != manifest.num_samples:
        raise ManifestError(
            f"{source}: shards hold {total} samples, 'num_samples' says {manifest.num_samples}"
        )
    if manifest.index.name != INDEX_NAME:
        raise ManifestError(
            f"{source}: index name {manifest.index.name!r}, expected {INDEX_NAME!r}"
        )
    return manifest


def _manifest(  # noqa: PLR0913 (the parts parse_manifest has checked, by keyword)
    data: Mapping[str, Any],
    source: str,
    *,
    version: int,
    fields: tuple[str, ...],
    schema: Schema,
    shards: tuple[ShardInfo, ...],
) -> Manifest:
    return Manifest(
        version=version,
        schema=schema,
        num_samples=_require(data, "num_samples", int, source),
        fields=fields,
        classes=tuple(_require(data, "classes", list, source)),
        key_width=_require(data, "key_width", int, source),
        shards=shards,
        index=_parse_file_info(_require(data, "index", dict, source), f"{source}: index"),
        build=_require(data, "build", dict, source),
        stats=_require(data, "stats", dict, source),
        shard_format=_optional(data, "shard_format", str, "tar", source),
    )


def _optional(data: Mapping[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    return _require(data, key, kind, where) if key in data else default


def manifest_from_text(text: str | bytes, source: str) -> Manifest:
    # a manifest of thousands of shards makes thousands of objects, which can start a full
    # collection over everything the process has imported (torch included): pause it
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ManifestError(f"{source}: not valid JSON ({e})") from e
        return parse_manifest(data, source)
    finally:
        if collecting:
            gc.enable()


def read_manifest(path: str | os.PathLike[str]) -> Manifest:
    path = Path(path)
    try:
        text = path.read_bytes()
    except FileNotFoundError as e:
        raise DatasetNotFoundError(
            f"{path}: no manifest; not a fastpack dataset (or its build has not finished)"
        ) from e
    return manifest_from_text(text, str(path))


def write_manifest(path: str | os.PathLike[str], manifest: Manifest) -> None:
    """Write atomically: a temporary file, fsync, then rename over `path`."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(manifest.to_json())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
