"""Streaming: an iterable over a dataset at a URL (or a local one), shard by shard, through a
bounded node-local cache; the per-epoch plan of which stream reads which shards."""

from .cache import ShardCache
from .dataset import StreamingDataset
from .options import FetchOptions

__all__ = ["FetchOptions", "ShardCache", "StreamingDataset"]
