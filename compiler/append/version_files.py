"""The files of dataset version N, the same wherever the dataset lies: its index (version N-1's
rows, then the appended ones), its rejects (cumulative) and its manifest."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from fastpack.formats import INDEX_NAME, REJECTS_NAME, Index, Manifest, ShardInfo
from fastpack.formats.layout import (
    version_index_name,
    version_manifest_name,
    version_rejects_name,
)
from fastpack.formats.manifest import VersionInfo, version_for
from fastpack.formats.schema import FileInfo

from ..written import file_info
from .errors import AppendError
from .merge_index import merge_index

_STATS = ("inputs", "samples", "rejected", "converted", "payload_bytes")
_OPTIONAL_STATS = ("not_transcoded", "duplicates")


def write_index(
    out: Path, version: int, previous: tuple[Path, Manifest], staged: tuple[Path, Manifest]
) -> FileInfo:
    """`versions/NNNNNN/index.fpx` in `out`, from version N-1's index file and manifest and the
    staged build's directory and manifest."""
    before, before_manifest = previous
    added, added_manifest = staged
    fields = before_manifest.schema.names
    return merge_index(
        out,
        version_index_name(version),
        previous=Index(before, fields),
        previous_counts=[s.samples for s in before_manifest.shards],
        added=Index(added / INDEX_NAME, fields),
        added_counts=[s.samples for s in added_manifest.shards],
        version=version_for(before_manifest.schema, before_manifest.shard_format, extended=True),
    )


def write_rejects(out: Path, version: int, parts: Sequence[Path]) -> FileInfo | None:
    """`versions/NNNNNN/rejects.jsonl` in `out`: the rejects files `parts` (version N-1's,
    the staged build's), one after the other; None where there are none."""
    if not parts:
        return None
    name = version_rejects_name(version)
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as file:
        for part in parts:
            with part.open("rb") as lines:
                shutil.copyfileobj(lines, file)
    os.replace(tmp, path)
    return file_info(path, name)


def rejects_parts(
    previous: tuple[Path | None, Manifest], staged: tuple[Path, Manifest]
) -> list[Path]:
    """The rejects files whose lines version N's holds, in order."""
    before, before_manifest = previous
    added, added_manifest = staged
    parts = []
    if before_manifest.rejects is not None and before is not None:
        parts.append(before)
    if added_manifest.rejects is not None:
        parts.append(added / REJECTS_NAME)
    return parts


def _stats(previous: Manifest, staged: Manifest) -> dict[str, int]:
    stats = {k: previous.stats.get(k, 0) + staged.stats.get(k, 0) for k in _STATS}
    for k in _OPTIONAL_STATS:  # absent where 0
        total = previous.stats.get(k, 0) + staged.stats.get(k, 0)
        if total:
            stats[k] = total
    return stats


def version_manifest(  # noqa: PLR0913 -- keyword inputs
    *,
    version: int,
    previous: Manifest,
    previous_text: bytes,
    staged: Manifest,
    shards: Sequence[ShardInfo],
    index: FileInfo,
    rejects: FileInfo | None,
) -> Manifest:
    """Version N's manifest: version N-1's shards then the appended `shards`, the classes
    extended, stats cumulative, `build` unchanged, and every earlier version listed, N-1's
    manifest file (`previous_text`) with its size and SHA-256."""
    if staged.classes[: len(previous.classes)] != previous.classes:
        raise AppendError(
            f"the staged append's classes {list(staged.classes)[:5]}... do not extend the "
            f"dataset's {list(previous.classes)[:5]}...: remove the staging directory and "
            "append again"
        )
    before = VersionInfo(
        number=version - 1,
        name=version_manifest_name(version - 1),
        bytes=len(previous_text),
        sha256=hashlib.sha256(previous_text).hexdigest(),
        num_samples=previous.num_samples,
    )
    all_shards = (*previous.shards, *shards)
    return Manifest(
        version=version_for(previous.schema, previous.shard_format, extended=True),
        shard_format=previous.shard_format,
        schema=previous.schema,
        num_samples=sum(s.samples for s in all_shards),
        fields=previous.fields,
        classes=staged.classes,
        key_width=previous.key_width,
        shards=all_shards,
        index=index,
        rejects=rejects,
        checksum=True,
        build=previous.build,
        stats=_stats(previous, staged),
        dataset_version=version,
        versions=(*previous.versions, before),
    )


def write_version(  # noqa: PLR0913 -- keyword inputs
    out: Path,
    version: int,
    *,
    previous: tuple[Manifest, bytes],
    staged: tuple[Path, Manifest],
    shards: Sequence[ShardInfo],
    previous_files: tuple[Path, Path | None],
) -> Manifest:
    """Version N's index and rejects written into `out`, and its manifest (not written), from
    version N-1 (`previous`: manifest and file bytes; `previous_files`: its index file and
    rejects file, None where it has none), the staged build (directory and manifest) and the
    entries of its shards in the dataset."""
    before, text = previous
    old_index, old_rejects = previous_files
    index = write_index(out, version, (old_index, before), staged)
    rejects = write_rejects(out, version, rejects_parts((old_rejects, before), staged))
    return version_manifest(
        version=version,
        previous=before,
        previous_text=text,
        staged=staged[1],
        shards=shards,
        index=index,
        rejects=rejects,
    )
