"""A dataset directory opened for reading: its manifest, index and shard paths, checked together."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import CorruptIndexError, DatasetNotFoundError
from .field_codec import FieldCodec
from .index import Index
from .layout import MANIFEST_NAME
from .manifest import Manifest
from .shard_root import is_url, resolve_shard_root
from .versions import read_dataset_manifest


class DatasetFiles:
    """Opens the manifest of version `version` (None: the latest; SPEC 11), unless given its
    `manifest`, already read, and memory-maps its index; O(1) in the number of samples."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        manifest: Manifest | None = None,
        *,
        version: int | None = None,
    ) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise DatasetNotFoundError(f"{self.root}: dataset directory not found")
        if manifest is None:
            manifest = read_dataset_manifest(self.root, version)
        self.manifest: Manifest = manifest
        self.shard_root = resolve_shard_root(str(self.root), manifest.shard_root)
        self.index = Index(self.root / manifest.index.name, self.manifest.schema.names)
        m, ix = self.manifest, self.index
        if (ix.num_samples, ix.num_shards) != (m.num_samples, len(m.shards)):
            raise CorruptIndexError(
                f"{ix.path}: {ix.num_samples} samples in {ix.num_shards} shards, but "
                f"{self.root / MANIFEST_NAME} lists {m.num_samples} in {len(m.shards)}"
            )
        if set(m.fields) != set(ix.fields):
            raise CorruptIndexError(f"{ix.path}: fields {ix.fields}, the manifest lists {m.fields}")
        if ix.version != m.version:
            raise CorruptIndexError(
                f"{ix.path}: index version {ix.version}, the manifest's is {m.version}"
            )
        self._codecs: dict[str, FieldCodec] = {}

    @property
    def records(self) -> bool:
        """Whether the shards are TFRecord files (formats/SPEC.md section 4.2), not tars."""
        return self.manifest.shard_format == "tfrecord"

    def codec(self, field: str) -> FieldCodec:
        """The codec of field `field`, with its zstd dictionary read from the dataset; in a record
        dataset the label field's members are varints (section 4.2)."""
        codec = self._codecs.get(field)
        if codec is None:
            spec = self.manifest.schema[field]
            dictionary = None
            if spec.zstd is not None and spec.zstd.dictionary is not None:
                path = self.root / spec.zstd.dictionary.name
                try:
                    dictionary = path.read_bytes()
                except FileNotFoundError as e:
                    raise DatasetNotFoundError(
                        f"{path}: zstd dictionary of field {field!r} not found"
                    ) from e
            varint = self.records and field == self.manifest.schema.label_field
            codec = self._codecs[field] = FieldCodec(spec, dictionary, varint=varint)
        return codec

    @property
    def version(self) -> int:
        """The dataset version opened (1 for a dataset never appended to)."""
        return self.manifest.dataset_version

    def shard_path(self, shard: int) -> Path:
        """Shard `shard`'s file: under the dataset, or under the shard root of adopted shards
        (SPEC 10), which must then be a local or mounted directory."""
        if is_url(self.shard_root):
            raise DatasetNotFoundError(
                f"{self.root / MANIFEST_NAME}: the shards lie at {self.shard_root}, not in a "
                "directory: read the dataset with StreamingDataset, which fetches them"
            )
        return Path(self.shard_root) / self.manifest.shards[shard].name

    def shard_index_path(self, shard: int) -> Path:
        return self.root / self.manifest.shards[shard].index_name

    def __len__(self) -> int:
        return self.manifest.num_samples
