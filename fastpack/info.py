"""`fastpack info`: a short summary of a dataset, read from its manifest alone (and, for a dataset
grown by appends, the manifests of its earlier versions, which say how many shards each added)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .formats import (
    MANIFEST_NAME,
    DatasetNotFoundError,
    FieldSpec,
    Manifest,
    Schema,
    read_manifest,
)
from .formats.shard_root import resolve_shard_root
from .formats.versions import check_version_text, manifest_name_of
from .sizes import format_size

SHOWN_CLASSES = 8
_NAMED_SHARDS = 2  # up to this many shards are all named; more: the first and last


@dataclass(frozen=True, kw_only=True)
class VersionRow:
    """One version of a dataset grown by appends (formats/SPEC.md section 11): its samples and
    the shards it added to the version before it (version 1: its shards)."""

    number: int
    samples: int
    shards_added: int


@dataclass(frozen=True, kw_only=True)
class DatasetInfo:
    """What `fastpack info` prints: the manifest of the dataset at `path` (of the version shown,
    by default the latest), summed up; `versions`: every version of a dataset grown by appends
    (none for a dataset of one version)."""

    path: str
    manifest: Manifest
    versions: tuple[VersionRow, ...] = ()
    file_system: str = ""  # the type of the file system the shards lie on ("" for a URL)
    io: str = ""  # how `Dataset(path)` reads its shards there ("" for shards at a URL)
    views: tuple[str, ...] = ()  # the views beside a local dataset (formats/SPEC.md section 8)
    decoder: str = ""  # the JPEG decoder this installation's crops use (crop_decode.decoder())

    @property
    def total_bytes(self) -> int:
        """Bytes of the shards and the index (the manifest and DALI indexes are small)."""
        return sum(s.bytes for s in self.manifest.shards) + self.manifest.index.bytes

    def to_dict(self) -> dict[str, Any]:
        m = self.manifest
        return {
            "path": str(self.path),
            "version": m.version,
            "samples": m.num_samples,
            "shards": len(m.shards),
            "shard_format": m.shard_format,
            "fields": list(m.fields),
            "schema": m.schema.to_json(),
            "classes": list(m.classes),
            "total_bytes": self.total_bytes,
            "build": dict(m.build),
            "stats": dict(m.stats),
            "file_system": self.file_system,
            "io": self.io,
            "views": list(self.views),
            "decoder": self.decoder,
            "dataset_version": m.dataset_version,
            "versions": [
                {
                    "number": v.number,
                    "samples": v.samples,
                    "shards_added": v.shards_added,
                    "latest": v.number == self.latest_version,
                }
                for v in self.versions
            ],
            "shard_root": self.shard_root,
        }

    @property
    def latest_version(self) -> int:
        """The dataset's latest version (the one shown when no other was asked for)."""
        return self.versions[-1].number if self.versions else self.manifest.dataset_version

    @property
    def shard_root(self) -> str | None:
        """Where the shards of a dataset of adopted shards lie (formats/SPEC.md section 10),
        resolved against the dataset's location; None for shards inside the dataset."""
        m = self.manifest
        return resolve_shard_root(self.path, m.shard_root) if m.adopted else None

    def format(self) -> str:
        m = self.manifest
        version = ""
        if self.versions:
            version = f", dataset version {m.dataset_version} of {self.latest_version}"
        lines = [
            f"dataset   {self.path} (format version {m.version}{version})",
            *self._version_lines(),
            f"samples   {m.num_samples}",
            f"shards    {len(m.shards)} ({m.shard_format}: {_shard_names(m)})",
            *self._adopted_lines(),
            f"fields    {', '.join(m.fields)}",
            *_format_schema(m.schema),
            f"classes   {_format_classes(m.classes)}",
            f"bytes     {self.total_bytes} ({format_size(self.total_bytes)})",
            f"build     {_format_mapping(_build_summary(m.build))}",
            f"stats     {_format_mapping(m.stats)}",
            f"storage   {self._storage()}",
            f"views     {', '.join(self.views) or '-'}",
            f"decoder   {self.decoder or '-'}",
        ]
        return "\n".join(lines)

    def _version_lines(self) -> list[str]:
        """One line per version: its samples and the shards it added; the latest and the one
        shown marked."""
        lines: list[str] = []
        for v in self.versions:
            marks = [
                *(["latest"] if v.number == self.latest_version else []),
                *(["shown"] if v.number == self.manifest.dataset_version else []),
            ]
            mark = f" ({', '.join(marks)})" if marks else ""
            added = f"{v.shards_added} shard{'' if v.shards_added == 1 else 's'}"
            lines.append(
                f"{'versions' if not lines else '':<10}{v.number}: {v.samples} samples, "
                f"{added} {'' if v.number == 1 else 'added'}".rstrip()
                + mark
            )
        return lines

    def _adopted_lines(self) -> list[str]:
        """Where adopted shards lie (none for shards written by a build)."""
        m = self.manifest
        if not m.adopted:
            return []
        recorded = "the dataset itself" if m.shard_root is None else f"shard_root {m.shard_root}"
        return [f"adopted   shards at {self.shard_root} ({recorded})"]

    def _storage(self) -> str:
        if not self.io:
            return "object store: StreamingDataset fetches whole shards into a local cache"
        how = {
            "pread": "network file system: Dataset reads with pread, a batch's reads at once",
            "mmap": "local: Dataset maps the shards",
        }[self.io]
        return f"{self.file_system or 'unknown file system'} ({how})"


def _shard_names(manifest: Manifest) -> str:
    """The first and last shard files, as the manifest names them."""
    names = [s.name for s in manifest.shards]
    if len(names) <= _NAMED_SHARDS:
        return ", ".join(names) or "none"
    return f"{names[0]} .. {names[-1]}"


def _format_field(spec: FieldSpec) -> str:
    """One field: its type, dtype and shape, whether optional, geometry, zstd."""
    kind: str = spec.type
    if spec.dtype is not None:
        kind += f" {spec.dtype}"
    if spec.shape is not None:
        kind += " (" + ", ".join("N" if d is None else str(d) for d in spec.shape) + ")"
    parts = [kind]
    if spec.optional:
        parts.append("optional")
    if spec.geometry is not None:
        parts.append(f"geometry {spec.geometry}")
    if spec.classes:
        parts.append(f"{len(spec.classes)} classes")
    if spec.zstd is not None:
        d = spec.zstd.dictionary
        dictionary = f"dictionary {format_size(d.bytes)}" if d is not None else "no dictionary"
        parts.append(f"zstd level {spec.zstd.level}, {dictionary}")
    return ", ".join(parts)


def _format_schema(schema: Schema) -> list[str]:
    width = max(len(s.name) for s in schema.fields)
    return [
        f"{'schema' if i == 0 else '':<10}{s.name:<{width}}  {_format_field(s)}"
        for i, s in enumerate(schema.fields)
    ]


def _format_classes(classes: tuple[str, ...]) -> str:
    if not classes:
        return "0 (labels are bare integers)"
    shown = ", ".join(classes[:SHOWN_CLASSES])
    more = f", ... ({len(classes) - SHOWN_CLASSES} more)" if len(classes) > SHOWN_CLASSES else ""
    return f"{len(classes)}: {shown}{more}"


def _build_summary(build: Mapping[str, Any]) -> dict[str, Any]:
    """The build options, a build schema by its field count (the schema lines show it)."""
    shown = dict(build)
    schema = shown.get("schema")
    if isinstance(schema, dict) and isinstance(schema.get("fields"), list):
        shown["schema"] = f"{len(schema['fields'])} fields"
    return shown


def _format_mapping(values: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "-"


def dataset_info(path: str | os.PathLike[str], *, version: int | None = None) -> DatasetInfo:
    """Read the manifest of version `version` (None: the latest) of the dataset directory or URL
    `path`, and for a dataset grown by appends those of its earlier versions; raises
    `FastpackError` subclasses (`VersionNotFoundError` for a version it does not have)."""
    from .reader.image.crop_decode import decoder  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .reader.remote import read_manifest_bytes  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .reader.shard_files import resolve_io  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .reader.views import list_views  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .storage import Location, is_url  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .storage.file_system import file_system_type  # noqa: PLC0415 -- on use: keeps `import fastpack` light

    if is_url(path):
        location = Location(os.fspath(path))
        text = read_manifest_bytes(location, location.retry)  # names a URL without a dataset
        manifest, versions = _versions(text, location.read_bytes, location.url_of, version)
        return DatasetInfo(
            path=os.fspath(path), manifest=manifest, versions=versions, decoder=str(decoder())
        )
    root = Path(path)
    if not root.is_dir():
        raise DatasetNotFoundError(f"{root}: dataset directory not found")
    try:
        text = (root / MANIFEST_NAME).read_bytes()
    except OSError:
        read_manifest(root / MANIFEST_NAME)  # raises what a reader is told
        raise
    manifest, versions = _versions(
        text, lambda name: (root / name).read_bytes(), lambda name: str(root / name), version
    )
    shards = resolve_shard_root(str(root), manifest.shard_root)  # adopted ones may lie elsewhere
    return DatasetInfo(
        path=str(root),
        manifest=manifest,
        versions=versions,
        file_system="" if is_url(shards) else file_system_type(shards),
        io="" if is_url(shards) else resolve_io("auto", shards),
        views=tuple(list_views(root)),
        decoder=str(decoder()),
    )


def _versions(
    text: bytes, read: Callable[[str], bytes], where: Callable[[str], str], version: int | None
) -> tuple[Manifest, tuple[VersionRow, ...]]:
    """The manifest of version `version` (None: the latest) of the dataset whose latest manifest
    is `text` and whose other files `read` gives by name (`where` names them in errors), and
    every version of it (none for a dataset of one version): each earlier version's manifest is
    read, checked against the latest's record of it, for its shard count."""
    from .formats.manifest import manifest_from_text  # noqa: PLC0415 -- on use: keeps `import fastpack` light

    latest = manifest_from_text(text, where(MANIFEST_NAME))
    dataset = where(MANIFEST_NAME).rpartition("/")[0]  # the directory or URL
    manifest_name_of(version, latest, dataset)  # a VersionNotFoundError for another version
    if not latest.versions:
        return latest, ()
    manifests = [
        check_version_text(read(v.name), v.number, latest, where(v.name)) for v in latest.versions
    ]
    manifests.append(latest)
    rows, before = [], 0
    for m in manifests:
        rows.append(
            VersionRow(
                number=m.dataset_version, samples=m.num_samples, shards_added=len(m.shards) - before
            )
        )
        before = len(m.shards)
    shown = latest if version is None else manifests[version - 1]
    return shown, tuple(rows)
