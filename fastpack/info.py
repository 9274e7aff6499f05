"""`fastpack info`: a short summary of a dataset, read from its manifest alone."""

from __future__ import annotations

import os
from collections.abc import Mapping
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
from .sizes import format_size

SHOWN_CLASSES = 8
_NAMED_SHARDS = 2  # up to this many shards are all named; more: the first and last


@dataclass(frozen=True, kw_only=True)
class DatasetInfo:
    """What `fastpack info` prints: the manifest of the dataset at `path`, summed up."""

    path: str
    manifest: Manifest
    file_system: str = ""  # the type of the file system of a local path ("" for a URL)
    io: str = ""  # how `Dataset(path)` reads its shards there ("" for a URL)
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
        }

    def format(self) -> str:
        m = self.manifest
        lines = [
            f"dataset   {self.path} (format version {m.version})",
            f"samples   {m.num_samples}",
            f"shards    {len(m.shards)} ({m.shard_format}: {_shard_names(m)})",
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


def dataset_info(path: str | os.PathLike[str]) -> DatasetInfo:
    """Read the manifest of the dataset directory or URL `path`; raises `FastpackError`
    subclasses."""
    from .reader import read_manifest_at  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .reader.file_system import file_system_type  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .reader.image.crop_decode import decoder  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .reader.shard_files import resolve_io  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .reader.views import list_views  # noqa: PLC0415 -- on use: keeps `import fastpack` light
    from .storage import is_url  # noqa: PLC0415 -- on use: keeps `import fastpack` light

    if is_url(path):
        return DatasetInfo(
            path=os.fspath(path), manifest=read_manifest_at(path), decoder=str(decoder())
        )
    root = Path(path)
    if not root.is_dir():
        raise DatasetNotFoundError(f"{root}: dataset directory not found")
    return DatasetInfo(
        path=str(root),
        manifest=read_manifest(root / MANIFEST_NAME),
        file_system=file_system_type(root),
        io=resolve_io("auto", root),
        views=tuple(list_views(root)),
        decoder=str(decoder()),
    )
