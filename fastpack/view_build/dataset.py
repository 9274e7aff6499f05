"""The columns a view is built from: a dataset's manifest and index (of one version of a dataset
grown by appends: the latest by default), opened in place for a local directory, downloaded (and
checked against the manifest) for a URL."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    CorruptIndexError,
    DatasetFiles,
    DatasetNotFoundError,
    Index,
    Manifest,
)
from fastpack.formats.manifest import manifest_from_text
from fastpack.formats.versions import check_version_text, manifest_name_of
from fastpack.storage import Expected, Location, is_url


@contextmanager
def open_dataset(
    dataset: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    version: int | None = None,
) -> Iterator[tuple[Manifest, Index]]:
    """`(manifest, index)` of version `version` (None: the latest) of the dataset directory or
    URL `dataset`, checked together."""
    if not is_url(dataset):
        files = DatasetFiles(dataset, version=version)
        yield files.manifest, files.index
        return
    location = Location(os.fspath(dataset), storage_options)
    manifest = _remote_manifest(location, version)
    info = manifest.index
    with tempfile.TemporaryDirectory(prefix="fastpack-view-") as tmp:
        path = Path(tmp) / INDEX_NAME
        location.download(info.name, path, Expected(size=info.bytes, sha256=info.sha256))
        index = Index(path, manifest.schema.names)
        if index.num_samples != manifest.num_samples:
            raise CorruptIndexError(
                f"{location.url_of(info.name)}: {index.num_samples} samples, the manifest "
                f"lists {manifest.num_samples}"
            )
        yield manifest, index


def _remote_manifest(location: Location, version: int | None) -> Manifest:
    """The manifest of version `version` (None: the latest) of the dataset at `location`, an
    earlier version's checked against the latest's record of it (formats/SPEC.md section 11)."""
    try:
        text = location.read_bytes(MANIFEST_NAME)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(
            f"{location.url_of(MANIFEST_NAME)}: no manifest; not a fastpack dataset (or its "
            f"build has not finished): {e.__cause__}"
        ) from e
    latest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
    name = manifest_name_of(version, latest, location.url)
    if version is None or name == MANIFEST_NAME:
        return latest
    return check_version_text(location.read_bytes(name), version, latest, location.url_of(name))
