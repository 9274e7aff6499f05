"""The files of an index over shards that stay where they are: each shard's DALI index
(`shards/NNNNNN.idx`), `index.fpx`, `rejects.jsonl` and the manifest, last (formats/SPEC.md
sections 2, 3, 5 and 10), written into a local directory; and their upload, the manifest last,
to a URL."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    REJECTS_NAME,
    Manifest,
    Schema,
    ShardInfo,
    write_manifest,
)
from fastpack.formats.layout import shard_idx_name
from fastpack.formats.manifest import version_for
from fastpack.formats.schema import FileInfo
from fastpack.formats.wds_index import VERSION_TAG
from fastpack.storage import Location

from ..written import file_info, reject_line, write_index_file
from .shard_rows import ShardRows


def _write_text(path: Path, text: str) -> FileInfo:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(text.encode("utf-8"))
    os.replace(tmp, path)
    return file_info(path, path.name)


def _idx_text(rows: ShardRows, shard_format: str) -> str:
    """wds2idx (section 5.1) or tfrecord2idx (5.2) text of the shard's kept samples."""
    if shard_format == "tfrecord":
        return "".join(line + "\n" for line in rows.idx_lines)
    return "\n".join([f"{VERSION_TAG} {rows.samples}", *rows.idx_lines]) + "\n"


def _rejects_text(shards: Sequence[ShardRows]) -> str:
    lines = []
    for rows in shards:
        for path, field, reason in rows.rejects:
            lines.append(reject_line(path, field, reason))
    return "".join(lines)


def write_dataset(  # noqa: PLR0913 -- keyword inputs
    out: Path,
    shards: Sequence[ShardRows],
    labels: Sequence[Sequence[int]],
    *,
    schema: Schema,
    classes: tuple[str, ...],
    shard_format: str,
    shard_root: str | None,
    source_kind: str,
) -> Manifest:
    """Write the dataset's files into `out`, the manifest last; `labels[k]` are shard `k`'s
    final labels."""
    infos = []
    for k, rows in enumerate(shards):
        idx = _write_text(out / shard_idx_name(k), _idx_text(rows, shard_format))
        digest = rows.digest
        if digest is None:
            raise ValueError(f"{rows.name}: indexed without its digest")
        infos.append(
            ShardInfo(
                name=rows.name,
                index_name=shard_idx_name(k),
                samples=rows.samples,
                bytes=digest.bytes,
                sha256=digest.sha256,
                crc32c=digest.crc32c,
                index_bytes=idx.bytes,
                index_sha256=idx.sha256,
            )
        )
    version = version_for(schema, shard_format, extended=True)
    parts = (rows.part(k, labels[k]) for k, rows in enumerate(shards))
    index_info = write_index_file(
        out / INDEX_NAME, shards, parts, fields=schema.names, version=version
    )
    rejected = sum(len(r.rejects) for r in shards)
    rejects = _write_text(out / REJECTS_NAME, _rejects_text(shards)) if rejected else None
    if not rejected:
        (out / REJECTS_NAME).unlink(missing_ok=True)
    samples = sum(r.samples for r in shards)
    manifest = Manifest(
        version=version,
        shard_format=shard_format,
        schema=schema,
        num_samples=samples,
        fields=schema.names,
        classes=classes,
        key_width=0,
        shards=tuple(infos),
        index=index_info,
        rejects=rejects,
        checksum=True,
        adopted=True,
        shard_root=shard_root,
        build={"source_kind": source_kind, "adopted": True},
        stats={
            "inputs": sum(r.inputs for r in shards),
            "samples": samples,
            "rejected": rejected,
            "converted": 0,
            "payload_bytes": sum(r.payload_bytes for r in shards),
        },
    )
    write_manifest(out / MANIFEST_NAME, manifest)
    return manifest


def dataset_names(manifest: Manifest) -> list[str]:
    """The files `write_dataset` wrote, relative to its directory, the manifest last."""
    names = [s.index_name for s in manifest.shards] + [INDEX_NAME]
    if manifest.rejects is not None:
        names.append(REJECTS_NAME)
    return [*names, MANIFEST_NAME]


def upload_dataset(local: Path, location: Location, manifest: Manifest) -> None:
    """Upload the files of the dataset in `local` to `location`, the manifest last."""
    for name in dataset_names(manifest):
        location.upload(local / name, name)
