"""The columns a view is built from: a dataset's manifest and index, opened in place for a local
directory, downloaded (and checked against the manifest) for a URL."""

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
from fastpack.storage import Expected, Location, is_url


@contextmanager
def open_dataset(
    dataset: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> Iterator[tuple[Manifest, Index]]:
    """`(manifest, index)` of the dataset directory or URL `dataset`, checked together."""
    if not is_url(dataset):
        files = DatasetFiles(dataset)
        yield files.manifest, files.index
        return
    location = Location(os.fspath(dataset), storage_options)
    try:
        text = location.read_bytes(MANIFEST_NAME)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(
            f"{location.url_of(MANIFEST_NAME)}: no manifest; not a fastpack dataset (or its "
            f"build has not finished): {e.__cause__}"
        ) from e
    manifest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
    with tempfile.TemporaryDirectory(prefix="fastpack-view-") as tmp:
        path = Path(tmp) / INDEX_NAME
        info = manifest.index
        location.download(INDEX_NAME, path, Expected(size=info.bytes, sha256=info.sha256))
        index = Index(path, manifest.schema.names)
        if index.num_samples != manifest.num_samples:
            raise CorruptIndexError(
                f"{location.url_of(INDEX_NAME)}: {index.num_samples} samples, the manifest "
                f"lists {manifest.num_samples}"
            )
        yield manifest, index
