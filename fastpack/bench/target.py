"""The dataset a bench reads: a local directory, or a URL and (when the streaming cache holds
every shard of it) a complete local copy that the map-style and DALI loaders can read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, Manifest, read_manifest
from fastpack.reader import StreamingDataset
from fastpack.reader.streaming.cache import ShardCache
from fastpack.storage import is_url


@dataclass(frozen=True, kw_only=True)
class Target:
    path: str  # as given: a directory or a URL
    remote: bool
    metadata: Path  # a local directory with the manifest and the index
    local: Path | None  # a complete local copy (for a directory: itself)
    no_local: str | None  # why there is no complete local copy
    manifest: Manifest


def resolve_target(path: str, storage_options: Mapping[str, Any] | None) -> Target:
    """The dataset at `path`; for a URL its manifest and index are fetched into the streaming
    cache (`fastpack.storage.default_cache_dir`), and its shards looked up there."""
    if not is_url(path):
        manifest = read_manifest(Path(path) / MANIFEST_NAME)  # names the path when missing
        return Target(
            path=path,
            remote=False,
            metadata=Path(path),
            local=Path(path),
            no_local=None,
            manifest=manifest,
        )
    with StreamingDataset(path, storage_options=storage_options) as stream:
        root, manifest = stream.root, stream.manifest
    cache = ShardCache(root, None)
    cached = sum(cache.lookup(s.name, s.bytes) is not None for s in manifest.shards)
    complete = cached == len(manifest.shards)
    reason = (
        None
        if complete
        else (
            f"{cached} of {len(manifest.shards)} shards in the local cache {root}: "
            "stream one epoch (or fetch_dataset) to bench a local copy"
        )
    )
    return Target(
        path=path,
        remote=True,
        metadata=root,
        local=root if complete else None,
        no_local=reason,
        manifest=manifest,
    )
