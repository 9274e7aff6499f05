"""Putting a dataset built earlier in a local directory at a URL, for the tests that read one from
a store: each file put once, in the order `build()` publishes a dataset (`dataset_files`: the
shards, the dictionaries, the index, the rejects and the manifest last). A build straight to a
URL is `build(source, url, ...)`; this copies one whose local bytes a test also reads."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.compiler.finish import dataset_files
from fastpack.storage import Location


def publish_dataset(local: Path, url: str, storage_options: Mapping[str, Any]) -> None:
    """Upload the finished dataset in `local` to `url`, the manifest last."""
    location = Location(url, storage_options)
    for name in dataset_files(local):
        location.upload(local / name, name)
