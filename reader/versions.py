"""The versions of a dataset grown by `fastpack append` (formats/SPEC.md section 11), as seen
from its latest manifest: which version a manifest digest names (`version_of`), for the
messages that refuse a view or a state made on another version than the one read."""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping
from typing import Any

from fastpack.formats import FastpackError, Manifest
from fastpack.formats.manifest import manifest_digest

from .remote import read_manifest_at


def check_version(version: Any, where: str) -> int | None:
    """`version` as a dataset version to read: None (the latest) or an int >= 1; a ValueError
    naming `where` and the value otherwise (a TypeError for what is not an integer)."""
    if version is None:
        return None
    if isinstance(version, bool) or not hasattr(version, "__index__"):
        raise TypeError(f"{where}: version must be an int >= 1 or None, got {version!r}")
    number = operator.index(version)
    if number < 1:
        raise ValueError(f"{where}: version must be >= 1 (or None: the latest), got {number}")
    return number


def version_of(
    dataset: str | os.PathLike[str],
    digest: str,
    storage_options: Mapping[str, Any] | None = None,
) -> int | None:
    """The version of the dataset at `dataset` (a directory or URL) whose manifest digest is
    `digest`, by its latest manifest (its own digest and `versions[].sha256`); None where no
    version has it or the latest manifest cannot be read."""
    try:
        latest = read_manifest_at(dataset, storage_options)
    except (FastpackError, OSError):
        return None
    return version_in(latest, digest)


def version_in(latest: Manifest, digest: str) -> int | None:
    """The version of the dataset whose latest manifest is `latest` that `digest` names."""
    if manifest_digest(latest) == digest:
        return latest.dataset_version
    for info in latest.versions:
        if info.sha256 == digest:
            return info.number
    return None
