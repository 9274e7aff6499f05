"""Datasets at URLs: their manifest, and a whole local copy (see `fastpack.storage` for URLs
and credentials)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import (
    MANIFEST_NAME,
    REJECTS_NAME,
    DatasetNotFoundError,
    Manifest,
    read_manifest,
)
from fastpack.formats.layout import version_manifest_name
from fastpack.formats.manifest import manifest_from_text
from fastpack.formats.schema import Dictionary
from fastpack.formats.versions import check_version_text, manifest_name_of, read_dataset_manifest
from fastpack.storage import Expected, Location, RetryPolicy, Transfer, is_url


def read_remote_manifest(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    retry: RetryPolicy | None = None,
    *,
    version: int | None = None,
) -> Manifest:
    """The manifest of version `version` (None: the latest) of the dataset at `url`;
    `DatasetNotFoundError` (naming the URL) for an unknown bucket or prefix, or a build that
    has not finished; `VersionNotFoundError` for a version the dataset does not have."""
    location = Location(url, storage_options, retry)
    return read_version_manifest(location, version, location.retry)[1]


def read_version_manifest(
    location: Location, version: int | None, retry: RetryPolicy
) -> tuple[bytes, Manifest]:
    """The bytes and the manifest of version `version` (None: the latest) of the dataset at
    `location`: the latest manifest, and for an earlier version its own file
    (`versions/NNNNNN/fastpack.json`) checked against what the latest records of it
    (formats/SPEC.md section 11). `VersionNotFoundError` names the versions there are."""
    text = read_manifest_bytes(location, retry)
    latest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
    name = manifest_name_of(version, latest, location.url)
    if version is None or name == MANIFEST_NAME:
        return text, latest
    try:
        earlier = location.read_bytes(name, retry)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(
            f"{location.url_of(name)}: the manifest of version {version} is missing (the "
            "latest lists it)"
        ) from e
    return earlier, check_version_text(earlier, version, latest, location.url_of(name))


def dictionaries(manifest: Manifest) -> list[Dictionary]:
    """The zstd dictionary files of the dataset (`dicts/<field>.zdict`), which a reader of its
    compressed fields needs beside the index."""
    return [
        spec.zstd.dictionary
        for spec in manifest.schema.fields
        if spec.zstd is not None and spec.zstd.dictionary is not None
    ]


def read_manifest_bytes(location: Location, retry: RetryPolicy) -> bytes:
    """The manifest's bytes; `DatasetNotFoundError` when there is none."""
    try:
        return location.read_bytes(MANIFEST_NAME, retry)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(
            f"{location.url_of(MANIFEST_NAME)}: no manifest; not a fastpack dataset (or its "
            f"build has not finished): {e.__cause__}"
        ) from e


def read_manifest_at(
    path: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    version: int | None = None,
) -> Manifest:
    """The manifest of version `version` (None: the latest) of a dataset given as a local
    directory or a URL."""
    if is_url(path):
        return read_remote_manifest(os.fspath(path), storage_options, version=version)
    if version is None:
        return read_manifest(Path(path) / MANIFEST_NAME)
    return read_dataset_manifest(Path(path), version)


def fetch_dataset(
    url: str,
    dest: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    retry: RetryPolicy | None = None,
    threads: int = 4,
) -> Path:
    """Copy the dataset at `url` into the directory `dest` (created; must be empty): index,
    zstd dictionaries and shards checked against the manifest's SHA-256s, the manifest written
    last; of a dataset grown by appends every version (the earlier versions' manifests, checked
    against the latest's record of them, and their indexes and rejects). Every read goes
    through `retry` (default `RetryPolicy()`)."""
    location = Location(url, storage_options, retry)
    retry = location.retry
    text = read_manifest_bytes(location, retry)
    manifest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    files: list[tuple[str, int, str, int | None]] = [
        (manifest.index.name, manifest.index.bytes, manifest.index.sha256, None)
    ]
    files += [(d.name, d.bytes, d.sha256, None) for d in dictionaries(manifest)]
    files += [(s.name, s.bytes, s.sha256, s.crc32c) for s in manifest.shards]
    earlier = _earlier_manifests(location, manifest, retry)
    for m, _ in earlier:
        listed = [m.index] if m.rejects is None else [m.index, m.rejects]
        files += [(f.name, f.bytes, f.sha256, None) for f in listed if f.name != REJECTS_NAME]
    for name, size, sha256, crc32c in files:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        location.download(
            name,
            out / name,
            Expected(size=size, sha256=sha256, crc32c=crc32c),
            Transfer(retry=retry, threads=threads, bulk=True),
        )
    for shard in manifest.shards:
        (out / shard.index_name).write_bytes(location.read_bytes(shard.index_name, retry))
    rejects = REJECTS_NAME if manifest.rejects is None else manifest.rejects.name
    _copy_optional(location, rejects, out, retry)
    if rejects != REJECTS_NAME:  # version 1's, where it had any
        _copy_optional(location, REJECTS_NAME, out, retry)
    if earlier:  # each version's manifest after its files, the latest's copy too
        for m, data in [*earlier, (manifest, text)]:
            name = version_manifest_name(m.dataset_version)
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(data)
    tmp = out / (MANIFEST_NAME + ".tmp")
    tmp.write_bytes(text)
    os.replace(tmp, out / MANIFEST_NAME)
    return out


def _earlier_manifests(
    location: Location, latest: Manifest, retry: RetryPolicy
) -> list[tuple[Manifest, bytes]]:
    """The manifest and bytes of each earlier version of the dataset at `location` whose latest
    manifest is `latest` (formats/SPEC.md section 11), checked against what it records of them;
    none for a dataset of one version."""
    found = []
    for info in latest.versions:
        data = location.read_bytes(info.name, retry)
        where = location.url_of(info.name)
        found.append((check_version_text(data, info.number, latest, where), data))
    return found


def _copy_optional(location: Location, name: str, out: Path, retry: RetryPolicy) -> None:
    try:
        data = location.read_bytes(name, retry)
    except DatasetNotFoundError:
        return
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)
