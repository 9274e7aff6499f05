"""Datasets at URLs: reading their manifest, copying them whole, caching their index shard by
shard."""

from .datasets import (
    dictionaries,
    fetch_dataset,
    read_manifest_at,
    read_manifest_bytes,
    read_remote_manifest,
    read_version_manifest,
)
from .index_rows import IndexRows

__all__ = [
    "IndexRows",
    "dictionaries",
    "fetch_dataset",
    "read_manifest_at",
    "read_manifest_bytes",
    "read_remote_manifest",
    "read_version_manifest",
]
