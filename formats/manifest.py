"""`fastpack.json`: the dataset manifest (formats/SPEC.md section 2)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import (
    ChecksumMismatchError,
    DatasetNotFoundError,
    ManifestError,
    UnsupportedVersionError,
)
from .layout import (
    EXTENDED_VERSION,
    MANIFEST_NAME,
    SHARD_FORMATS,
    SUPPORTED_VERSIONS,
    VERSION,
    version_index_name,
    version_manifest_name,
    version_rejects_name,
)
from .schema import V1_SCHEMA, FieldSpec, FileInfo, Schema, parse_schema, type_of_extension

FORMAT_NAME = "fastpack"
DEFAULT_FIELDS = V1_SCHEMA.names
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, kw_only=True)
class ShardInfo:
    name: str
    index_name: str
    samples: int
    bytes: int
    sha256: str
    crc32c: int | None = None  # OPTIONAL (SPEC 2): what downloads check, cheaper than SHA-256
    # OPTIONAL (SPEC 2), both or neither: size and SHA-256 of the DALI index `index_name`
    index_bytes: int | None = None
    index_sha256: str | None = None

    def __post_init__(self) -> None:
        if (self.index_bytes is None) != (self.index_sha256 is None):
            raise ManifestError(
                f"shard {self.name!r}: index_bytes and index_sha256 go together, found only "
                f"{'index_bytes' if self.index_sha256 is None else 'index_sha256'}"
            )


@dataclass(frozen=True, kw_only=True)
class VersionInfo:
    """An earlier version of a dataset grown by appends (SPEC 11): its manifest file's name,
    size and SHA-256, and its samples."""

    number: int
    name: str
    bytes: int
    sha256: str
    num_samples: int


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
    rejects: FileInfo | None = None  # OPTIONAL (SPEC 2): `rejects.jsonl`, where there is one
    checksum: bool = False  # whether the text records its own SHA-256 (`sha256`, SPEC 2)
    # version 3 only (SPEC 10, 11): shards written by another tool, where their names resolve
    # (None: the dataset), the dataset version this manifest describes and the earlier ones
    adopted: bool = False
    shard_root: str | None = None
    dataset_version: int = 1
    versions: tuple[VersionInfo, ...] = ()

    @property
    def extended(self) -> bool:
        """Whether the dataset uses a feature of version 3: adopted shards or appends."""
        return self.adopted or self.shard_root is not None or self.dataset_version != 1

    def __post_init__(self) -> None:
        _check_extension(self)
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
        """The canonical, byte-stable text of the manifest (SPEC section 2), with its own
        SHA-256 (`sha256`) where `checksum` is set."""
        data = asdict(self)
        del data["checksum"]
        data["format"] = FORMAT_NAME
        if self.version == 1:
            del data["schema"]
        else:
            data["schema"] = self.schema.to_json()
        if self.shard_format == "tar":
            del data["shard_format"]  # tar datasets are byte-identical to those written before it
        if self.rejects is None:
            del data["rejects"]
        for shard in data["shards"]:
            for key in ("crc32c", "index_bytes", "index_sha256"):
                if shard[key] is None:
                    del shard[key]
        for key, absent in (
            ("adopted", False),
            ("shard_root", None),
            ("dataset_version", 1),
            ("versions", ()),
        ):
            if data[key] == absent:
                del data[key]
        text = _canonical(data)
        if not self.checksum:
            return text
        data["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return _canonical(data)


def _canonical(data: Mapping[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def content_sha256(manifest: Manifest) -> str:
    """Hex SHA-256 of the manifest's canonical text without its own `sha256` (SPEC section 2):
    what a manifest with `checksum` records."""
    return hashlib.sha256(replace(manifest, checksum=False).to_json().encode("utf-8")).hexdigest()


def manifest_digest(manifest: Manifest) -> str:
    """Hex SHA-256 of the manifest's canonical text: the identity of its dataset (views and
    loader states name a dataset by it). Equal to the SHA-256 of `fastpack.json` as
    `write_manifest` writes it."""
    return hashlib.sha256(manifest.to_json().encode("utf-8")).hexdigest()


def version_for(schema: Schema, shard_format: str = "tar", *, extended: bool = False) -> int:
    """The version a writer gives a dataset of `schema`: 3 where it has adopted shards or is
    grown by appends (`extended`), else 1 for `jpg` + `cls` in tar shards (which every reader
    reads), else 2."""
    if extended:
        return EXTENDED_VERSION
    return 1 if schema.is_v1 and shard_format == "tar" else VERSION


def _check_extension(manifest: Manifest) -> None:
    """Version 3's keys (SPEC 10, 11): present only in version 3, which only they call for."""
    m = manifest
    if m.extended != (m.version == EXTENDED_VERSION):
        found = "adopted shards or appends" if m.extended else "neither adopted shards nor appends"
        raise ManifestError(
            f"manifest: version {m.version} with {found}; version {EXTENDED_VERSION} is for "
            "datasets with adopted shards or appends, and only for them"
        )
    if m.shard_root is not None and not m.adopted:
        raise ManifestError(
            "manifest: 'shard_root' without 'adopted': only adopted shards lie elsewhere"
        )
    if m.shard_root is not None and (not m.shard_root or _CONTROL.search(m.shard_root)):
        raise ManifestError(f"manifest: 'shard_root' {m.shard_root!r:.80} is not a path or URL")
    if m.dataset_version < 1:
        raise ManifestError(f"manifest: 'dataset_version' {m.dataset_version}, expected >= 1")
    numbers = tuple(v.number for v in m.versions)
    if numbers != tuple(range(1, m.dataset_version)):
        raise ManifestError(
            f"manifest: 'versions' lists {list(numbers)}, version {m.dataset_version} lists "
            f"versions 1 to {m.dataset_version - 1}"
        )
    for v in m.versions:
        if v.name != version_manifest_name(v.number) or _SHA256.fullmatch(v.sha256) is None:
            raise ManifestError(
                f"manifest: versions[{v.number - 1}]: name {v.name!r} and sha256 "
                f"{v.sha256!r:.80}, expected {version_manifest_name(v.number)!r} and 64 "
                "lowercase hex digits"
            )
        if v.bytes < 0 or v.num_samples < 0:
            raise ManifestError(f"manifest: versions[{v.number - 1}]: a negative size or count")
    if m.adopted and m.dataset_version != 1:
        raise ManifestError("manifest: appends to adopted shards are not part of this format")


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


MAX_NAME_BYTES = 1024  # a relative path under the dataset
MAX_PART_BYTES = 255  # NAME_MAX of the common file systems
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SHOWN = 80  # characters of a refused name quoted in the error


def _name_problem(name: str) -> str | None:
    """What keeps `name` from naming a file under the dataset (SPEC 2), or None."""
    parts = name.split("/")
    if not name:
        return "is empty"
    if _CONTROL.search(name):
        return "holds a control character"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    if any(p in ("", ".", "..") for p in parts):
        return "is not a relative path of named parts"
    if any(len(p.encode("utf-8", "surrogatepass")) > MAX_PART_BYTES for p in parts):
        return f"has a part longer than {MAX_PART_BYTES} bytes"
    return None


def _file_name(name: str, key: str, where: str) -> str:
    """`name`, or ManifestError where it cannot name a file under the dataset."""
    problem = _name_problem(name)
    if problem is not None:
        shown = name if len(name) <= _SHOWN else name[:_SHOWN] + "..."
        raise ManifestError(f"{where}: key {key!r} {shown!r} {problem}: not a file name")
    return name


def _parse_shard(data: Any, where: str) -> ShardInfo:
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: expected an object, found {type(data).__name__}")
    parts = {
        "name": _file_name(_require(data, "name", str, where), "name", where),
        "index_name": _file_name(_require(data, "index_name", str, where), "index_name", where),
        "samples": _require(data, "samples", int, where),
        "bytes": _require(data, "bytes", int, where),
        "sha256": _require(data, "sha256", str, where),
        "crc32c": _optional_crc32c(data, where),
        "index_bytes": _optional(data, "index_bytes", int, None, where),
        "index_sha256": _optional_sha256(data, "index_sha256", where),
    }
    if parts["index_bytes"] is not None and parts["index_bytes"] < 0:
        raise ManifestError(f"{where}: key 'index_bytes' is {parts['index_bytes']}, expected >= 0")
    try:
        return ShardInfo(**parts)
    except ManifestError as e:
        raise ManifestError(f"{where}: {e}") from e


def _optional_sha256(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value: str | None = _optional(data, key, str, None, where)
    if value is not None and _SHA256.fullmatch(value) is None:
        raise ManifestError(
            f"{where}: key {key!r} is {value!r:.80}, expected 64 lowercase hex digits"
        )
    return value


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
    _optional_sha256(data, "sha256", source)  # checked against the text by `check_manifest_text`
    total = sum(s.samples for s in shards)
    if total != manifest.num_samples:
        raise ManifestError(
            f"{source}: shards hold {total} samples, 'num_samples' says {manifest.num_samples}"
        )
    index_name = version_index_name(manifest.dataset_version)
    if manifest.index.name != index_name:
        raise ManifestError(
            f"{source}: index name {manifest.index.name!r}, expected {index_name!r}"
        )
    rejects_name = version_rejects_name(manifest.dataset_version)
    if manifest.rejects is not None and manifest.rejects.name != rejects_name:
        raise ManifestError(
            f"{source}: rejects name {manifest.rejects.name!r}, expected {rejects_name!r}"
        )
    return manifest


def _manifest(  # noqa: PLR0913 -- keyword inputs
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
        rejects=(
            _parse_file_info(data["rejects"], f"{source}: rejects") if "rejects" in data else None
        ),
        checksum="sha256" in data,
        adopted=_optional(data, "adopted", bool, False, source),
        shard_root=_optional(data, "shard_root", str, None, source),
        dataset_version=_optional(data, "dataset_version", int, 1, source),
        versions=tuple(
            _parse_version(v, f"{source}: versions[{i}]")
            for i, v in enumerate(_optional(data, "versions", list, [], source))
        ),
    )


def _parse_version(data: Any, where: str) -> VersionInfo:
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: expected an object, found {type(data).__name__}")
    return VersionInfo(
        number=_require(data, "number", int, where),
        name=_require(data, "name", str, where),
        bytes=_require(data, "bytes", int, where),
        sha256=_require(data, "sha256", str, where),
        num_samples=_require(data, "num_samples", int, where),
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


def check_manifest_text(text: bytes, source: str, manifest: Manifest | None = None) -> Manifest:
    """The manifest in `text` (`manifest`, where it is already parsed from `text`), checked to
    cover every byte of it (SPEC section 2): the SHA-256 it records (if it records one) is that
    of its content, and `text` is the canonical text of what it holds (no other whitespace,
    escape, key or number form). `ChecksumMismatchError` or `ManifestError` naming `source` and
    where the bytes differ otherwise."""
    if manifest is None:
        manifest = manifest_from_text(text, source)
    canonical = manifest.to_json().encode("utf-8")
    if text == canonical:  # the canonical text records the SHA-256 of its own content
        return manifest
    if manifest.checksum:
        recorded = json.loads(text)["sha256"]
        if (digest := content_sha256(manifest)) != recorded:
            raise ChecksumMismatchError(
                f"{source}: its content's sha256 is {digest}, it records {recorded}: the file "
                "is damaged"
            )
    difference = first_difference(text, canonical)
    raise ManifestError(f"{source}: not the canonical text of what it holds; {difference}")


def first_difference(found: bytes, expected: bytes) -> str:
    """Where the text `found` first departs from its canonical form `expected`: byte, line and
    column, with a few bytes of each (for messages)."""
    at = next(
        (i for i, (a, b) in enumerate(zip(found, expected, strict=False)) if a != b),
        min(len(found), len(expected)),
    )
    line = found.count(b"\n", 0, at) + 1
    column = at - (found.rfind(b"\n", 0, at) + 1) + 1
    return (
        f"byte {at} (line {line}, column {column}) is {found[at : at + 12]!r}, the canonical "
        f"text has {expected[at : at + 12]!r}"
    )


def read_manifest(path: str | os.PathLike[str]) -> Manifest:
    return read_manifest_text(path)[0]


def read_manifest_text(path: str | os.PathLike[str]) -> tuple[Manifest, bytes]:
    """The manifest at `path` (its file, or the dataset directory that holds it) and the bytes of
    its file."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    try:
        text = path.read_bytes()
    except FileNotFoundError as e:
        raise DatasetNotFoundError(
            f"{path}: no manifest; not a fastpack dataset (or its build has not finished)"
        ) from e
    return manifest_from_text(text, str(path)), text


def write_manifest(path: str | os.PathLike[str], manifest: Manifest) -> None:
    """Write atomically: a temporary file, fsync, then rename over `path`."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(manifest.to_json())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
