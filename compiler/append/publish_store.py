"""Publishing version N of a dataset in an object store: the staged shards uploaded under the
numbers after the dataset's, then version N's index, rejects and manifest (assembled locally,
from version N-1's downloaded index and rejects), version 1's manifest kept at the first
append, and `fastpack.json` last. No object an earlier version uses is written. Publishing
again after an interruption uploads only what the store lacks."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from fastpack.formats import MANIFEST_NAME, Manifest, ShardInfo, shard_name, write_manifest
from fastpack.formats.checksum import file_sha256
from fastpack.formats.layout import shard_idx_name, version_manifest_name
from fastpack.formats.schema import FileInfo
from fastpack.storage import Location

from ..build_dir import temp_path
from .publish import FIRST_VERSION
from .version_files import write_version

PUBLISH_DIR = ".publish"  # inside the staging directory: version N's files, assembled


def upload_shards(
    location: Location, staged: Path, manifest: Manifest, first: int
) -> list[ShardInfo]:
    """Upload the staged shards of `manifest` numbered from `first` (each `.idx`, then its
    shard), skipping those the store holds at their size; their entries in the dataset."""
    uploaded = []
    for k, info in enumerate(manifest.shards):
        name = shard_name(first + k, manifest.shard_format)
        index_name = shard_idx_name(first + k)
        for local, remote, size in (
            (info.index_name, index_name, info.index_bytes),
            (info.name, name, info.bytes),
        ):
            if size is None or location.size(remote) != size:
                location.upload(staged / local, remote)
        uploaded.append(dataclasses.replace(info, name=name, index_name=index_name))
    return uploaded


def previous_path(work: Path, name: str) -> Path:
    """Where version N-1's file `name` is downloaded to in the publishing directory `work`."""
    return work / "previous" / name


def download_previous(location: Location, name: str, work: Path, known: FileInfo) -> Path:
    """Version N-1's file `name` (of size and SHA-256 `known`) in `work`: downloaded, unless
    it is there already with those (the index, downloaded by a staged build that skips
    duplicates)."""
    path = previous_path(work, name)
    if path.is_file() and path.stat().st_size == known.bytes and file_sha256(path) == known.sha256:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    tmp.write_bytes(location.read_bytes(name))
    os.replace(tmp, path)
    return path


def publish_store(
    location: Location,
    version: int,
    previous: tuple[Manifest, bytes],
    staged: tuple[Path, Manifest],
) -> Manifest:
    """Publish the staged build (its directory and manifest) as version `version` of the
    dataset at `location`, whose version N-1 is `previous` (manifest and file bytes)."""
    before, text = previous
    staged_dir, added = staged
    work = staged_dir / PUBLISH_DIR
    shards = upload_shards(location, staged_dir, added, len(before.shards))
    old_index = download_previous(location, before.index.name, work, before.index)
    old_rejects = (
        download_previous(location, before.rejects.name, work, before.rejects)
        if before.rejects is not None
        else None
    )
    manifest = write_version(
        work,
        version,
        previous=previous,
        staged=staged,
        shards=shards,
        previous_files=(old_index, old_rejects),
    )
    names = [manifest.index.name]
    names += [manifest.rejects.name] if manifest.rejects is not None else []
    if before.dataset_version == FIRST_VERSION:
        first = work / version_manifest_name(FIRST_VERSION)
        first.parent.mkdir(parents=True, exist_ok=True)
        first.write_bytes(text)
        if location.size(first.relative_to(work).as_posix()) is None:
            names.append(version_manifest_name(FIRST_VERSION))
    names.append(version_manifest_name(version))
    (work / names[-1]).parent.mkdir(parents=True, exist_ok=True)
    write_manifest(work / names[-1], manifest)
    for name in names:
        location.upload(work / name, name)
    location.upload(work / names[-1], MANIFEST_NAME)
    return manifest
