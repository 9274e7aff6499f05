"""The end of a build, the same for every target and runner: index from the shard parts,
rejects report, then the manifest (last), in the directory where the dataset is assembled; and
the files of a finished dataset in the order a target publishes them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    REJECTS_NAME,
    SHARDS_DIR,
    Manifest,
    Schema,
    ShardInfo,
    read_manifest,
    shard_name,
    write_manifest,
)
from fastpack.formats.layout import shard_idx_name
from fastpack.formats.manifest import version_for
from fastpack.formats.schema import FileInfo

from .build_dir import BUILD_DIR
from .jobs.index_parts import load_part, part_path
from .jobs.shard_record import ShardRecord, load_record
from .options import BuildOptions
from .planning.plan_store import PlanMeta
from .written import file_info, reject_line, write_index_file


def write_index(
    out: Path, records: Sequence[ShardRecord], schema: Schema, shard_format: str = "tar"
) -> FileInfo:
    """Announce the totals from the records, then append the parts one shard at a time."""
    parts = (load_part(part_path(out, r.shard), schema.names) for r in records)
    return write_index_file(
        out / INDEX_NAME,
        records,
        parts,
        fields=schema.names,
        version=version_for(schema, shard_format),
    )


def write_rejects(out: Path, records: Sequence[ShardRecord]) -> FileInfo | None:
    """`rejects.jsonl`, in plan order; only when something was rejected (else None). A line
    names the field that rejected its sample, unless its image did."""
    if not any(r.rejects for r in records):
        return None
    tmp = out / (REJECTS_NAME + ".tmp")
    with tmp.open("w", encoding="utf-8") as file:
        for record in records:
            for source, reason, field in record.rejects:
                file.write(reject_line(source, field, reason))
    os.replace(tmp, out / REJECTS_NAME)
    return file_info(out / REJECTS_NAME, REJECTS_NAME)


def _not_transcoded(records: Sequence[ShardRecord]) -> dict[str, int]:
    """`stats.not_transcoded`, where some input was kept as it was by `--baseline` (SPEC 2)."""
    kept = sum(len(r.kept) for r in records)
    return {"not_transcoded": kept} if kept else {}


def _duplicates(records: Sequence[ShardRecord]) -> dict[str, int]:
    """`stats.duplicates`, where an append left out inputs the dataset held (SPEC 2)."""
    left_out = sum(len(r.duplicates) for r in records)
    return {"duplicates": left_out} if left_out else {}


def write_dataset_manifest(  # noqa: PLR0913 -- keyword inputs
    out: Path,
    meta: PlanMeta,
    records: Sequence[ShardRecord],
    build: Mapping[str, Any],
    schema: Schema,
    *,
    shard_format: str = "tar",
) -> Manifest:
    """Index, rejects, then the manifest of a dataset of `schema` (with its dictionaries) in
    shards of `shard_format`, with a checksum of every file and its own (SPEC section 2)."""
    index = write_index(out, records, schema, shard_format)
    rejects = write_rejects(out, records)
    shards = tuple(
        ShardInfo(
            name=shard_name(r.shard, shard_format),
            index_name=shard_idx_name(r.shard),
            samples=r.samples,
            bytes=r.bytes,
            sha256=r.sha256,
            crc32c=r.crc32c,
            index_bytes=r.index_bytes,
            index_sha256=r.index_sha256,
        )
        for r in records
    )
    samples = sum(r.samples for r in records)
    manifest = Manifest(
        version=version_for(schema, shard_format),
        shard_format=shard_format,
        schema=schema,
        num_samples=samples,
        fields=schema.names,
        classes=meta.classes,
        key_width=meta.key_width,
        shards=shards,
        index=index,
        rejects=rejects,
        checksum=True,
        build=dict(build),
        stats={
            "inputs": meta.num_inputs,
            "samples": samples,
            "rejected": sum(len(r.rejects) for r in records),
            "converted": sum(r.converted for r in records),
            "payload_bytes": sum(r.payload_bytes for r in records),
            **_not_transcoded(records),
            **_duplicates(records),
        },
    )
    write_manifest(out / MANIFEST_NAME, manifest)
    return manifest


def dataset_files(out: Path, *, shards: bool = True) -> list[str]:
    """The files of the finished dataset in `out`, relative to it, in the order a target
    publishes them: each shard's `.idx` and shard (unless `shards` is false: they are
    published already), the dictionaries, the index, the rejects, and the manifest last, so
    that a manifest at the target means a whole dataset."""
    manifest = read_manifest(out / MANIFEST_NAME)
    names = [n for s in manifest.shards for n in (s.index_name, s.name)] if shards else []
    names += [
        spec.zstd.dictionary.name
        for spec in manifest.schema.fields
        if spec.zstd is not None and spec.zstd.dictionary is not None
    ]
    names.append(manifest.index.name)
    if (out / REJECTS_NAME).exists():
        names.append(REJECTS_NAME)
    return [*names, MANIFEST_NAME]


def finish_dataset(  # noqa: PLR0913 -- keyword inputs
    out: Path,
    meta: PlanMeta,
    *,
    options: BuildOptions,
    schema: Schema,
    notes: dict[str, Any],
    kind: str,
) -> tuple[Manifest, tuple[tuple[str, str], ...]]:
    """Index, rejects and manifest (last) from the records of every shard in the directory
    `out`, then its build files go. Returns the manifest, and the inputs stored otherwise than
    asked, and why (`ShardRecord.kept`), for the summary."""
    records = [load_record(out, shard) for shard in range(meta.num_shards)]
    build_info = {
        "source_kind": kind,
        "samples_per_shard": meta.samples_per_shard,
        **options.shaping(),
        **notes,
    }
    manifest = write_dataset_manifest(
        out, meta, records, build_info, schema, shard_format=options.shard_format
    )
    shutil.rmtree(out / BUILD_DIR)
    for leftover in (out / SHARDS_DIR).glob("*.tmp"):  # from jobs of a killed build
        leftover.unlink(missing_ok=True)
    return manifest, tuple(line for record in records for line in record.kept)
