"""Publishing version N of a local dataset: the staged shards renamed into `shards/` after the
dataset's (a rename, no copy: the DALI `.idx` names keys, not shard numbers), version N's
index, rejects and manifest written under `versions/NNNNNN/`, version 1's manifest kept there
at the first append, and `fastpack.json` replaced last, atomically. No file an earlier version
uses is written. Publishing again after an interruption redoes nothing that is done: a shard
already moved is recognised by its SHA-256."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from fastpack.formats import MANIFEST_NAME, Manifest, ShardInfo, shard_name, write_manifest
from fastpack.formats.checksum import file_sha256
from fastpack.formats.layout import shard_idx_name, version_manifest_name

from .errors import AppendError
from .version_files import write_version

FIRST_VERSION = 1


def _move(src: Path, dst: Path, sha256: str | None, staged: Path) -> None:
    """Rename `src` to `dst`, unless `dst` holds it already (an interrupted publish)."""
    if dst.exists():
        if sha256 is not None and file_sha256(dst) != sha256:
            raise AppendError(
                f"{dst}: exists, and is not the staged {src.name} (SHA-256 {sha256}): a file "
                f"no version of the dataset lists; move it away and append again with --resume"
            )
        src.unlink(missing_ok=True)
        return
    if not src.exists():
        raise AppendError(
            f"{src}: missing, and not at {dst} either: the staged append is damaged; remove "
            f"{staged} and append again"
        )
    os.rename(src, dst)


def move_shards(root: Path, staged: Path, manifest: Manifest, first: int) -> list[ShardInfo]:
    """Rename the staged shards of `manifest` into `root`'s `shards/`, numbered from `first`;
    their entries in the dataset."""
    moved = []
    for k, info in enumerate(manifest.shards):
        name = shard_name(first + k, manifest.shard_format)
        index_name = shard_idx_name(first + k)
        _move(staged / info.index_name, root / index_name, info.index_sha256, staged)
        _move(staged / info.name, root / name, info.sha256, staged)
        moved.append(dataclasses.replace(info, name=name, index_name=index_name))
    return moved


def keep_first_manifest(root: Path, text: bytes) -> None:
    """`versions/000001/fastpack.json`: version 1's manifest, byte for byte, before the first
    append replaces `fastpack.json`."""
    path = root / version_manifest_name(FIRST_VERSION)
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(text)
    os.replace(tmp, path)


def publish_local(
    root: Path, version: int, previous: tuple[Manifest, bytes], staged: tuple[Path, Manifest]
) -> Manifest:
    """Publish the staged build (its directory and manifest) as version `version` of the
    dataset at `root`, whose version N-1 is `previous` (manifest and file bytes)."""
    before, text = previous
    staged_dir, added = staged
    shards = move_shards(root, staged_dir, added, len(before.shards))
    old_rejects = root / before.rejects.name if before.rejects is not None else None
    manifest = write_version(
        root,
        version,
        previous=previous,
        staged=staged,
        shards=shards,
        previous_files=(root / before.index.name, old_rejects),
    )
    if before.dataset_version == FIRST_VERSION:
        keep_first_manifest(root, text)
    write_manifest(root / version_manifest_name(version), manifest)
    write_manifest(root / MANIFEST_NAME, manifest)
    return manifest
