"""A dataset directory opened for reading: its manifest, index and shard paths, checked together."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import CorruptIndexError, DatasetNotFoundError
from .index import Index
from .layout import INDEX_NAME, MANIFEST_NAME
from .manifest import Manifest, read_manifest


class DatasetFiles:
    """Opens `fastpack.json` and memory-maps `index.fpx`; O(1) in the number of samples."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise DatasetNotFoundError(f"{self.root}: dataset directory not found")
        self.manifest: Manifest = read_manifest(self.root / MANIFEST_NAME)
        self.index = Index(self.root / INDEX_NAME)
        m, ix = self.manifest, self.index
        if (ix.num_samples, ix.num_shards) != (m.num_samples, len(m.shards)):
            raise CorruptIndexError(
                f"{ix.path}: {ix.num_samples} samples in {ix.num_shards} shards, but "
                f"{self.root / MANIFEST_NAME} lists {m.num_samples} in {len(m.shards)}"
            )
        if set(m.fields) != set(ix.fields):
            raise CorruptIndexError(f"{ix.path}: fields {ix.fields}, the manifest lists {m.fields}")

    def shard_path(self, shard: int) -> Path:
        return self.root / self.manifest.shards[shard].name

    def shard_index_path(self, shard: int) -> Path:
        return self.root / self.manifest.shards[shard].index_name

    def __len__(self) -> int:
        return self.manifest.num_samples
