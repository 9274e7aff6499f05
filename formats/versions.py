"""Which file holds version N of a dataset grown by appends, read and checked against the
latest manifest's record of it (formats/SPEC.md section 11)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .errors import ChecksumMismatchError, DatasetNotFoundError, ManifestError, VersionNotFoundError
from .layout import MANIFEST_NAME, version_manifest_name
from .manifest import Manifest, manifest_from_text, read_manifest


def version_numbers(latest: Manifest) -> range:
    """The versions of the dataset whose latest manifest is `latest`: 1 to its own."""
    return range(1, latest.dataset_version + 1)


def manifest_name_of(version: int | None, latest: Manifest, dataset: str) -> str:
    """The name (under the dataset) of version `version`'s manifest (None: the latest):
    `fastpack.json` for the latest, `versions/NNNNNN/fastpack.json` for an earlier one.
    `VersionNotFoundError` naming `dataset` and the versions there are, for another."""
    if version is None or version == latest.dataset_version:
        return MANIFEST_NAME
    if type(version) is not int or version not in version_numbers(latest):
        there = latest.dataset_version
        raise VersionNotFoundError(
            f"{dataset}: no version {version!r}; the dataset has "
            + ("version 1 only" if there == 1 else f"versions 1 to {there} (latest {there})")
        )
    return version_manifest_name(version)


def check_version_text(text: bytes, version: int, latest: Manifest, source: str) -> Manifest:
    """Version `version`'s manifest from `text`, checked against what the latest manifest
    records of it (size and SHA-256) and against the version it says it is."""
    info = latest.versions[version - 1]
    digest = hashlib.sha256(text).hexdigest()
    if (len(text), digest) != (info.bytes, info.sha256):
        raise ChecksumMismatchError(
            f"{source}: {len(text)} bytes of SHA-256 {digest}, the latest manifest records "
            f"{info.bytes} bytes of {info.sha256} for version {version}: the file is damaged"
        )
    manifest = manifest_from_text(text, source)
    if manifest.dataset_version != version:
        raise ManifestError(
            f"{source}: describes version {manifest.dataset_version}, expected {version}"
        )
    return manifest


def read_dataset_manifest(root: str | Path, version: int | None = None) -> Manifest:
    """The manifest of version `version` (None: the latest) of the dataset in directory
    `root`."""
    root = Path(root)
    latest = read_manifest(root / MANIFEST_NAME)
    name = manifest_name_of(version, latest, str(root))
    if version is None or name == MANIFEST_NAME:
        return latest
    path = root / name
    try:
        text = path.read_bytes()
    except FileNotFoundError as e:
        raise DatasetNotFoundError(
            f"{path}: the manifest of version {version} is missing (the latest lists it)"
        ) from e
    return check_version_text(text, version, latest, str(path))
