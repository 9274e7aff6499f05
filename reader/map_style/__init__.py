"""The map-style reader: `Dataset`, random access to any sample of a local dataset."""

from .dataset import Dataset
from .shard_reader import ShardReader

__all__ = ["Dataset", "ShardReader"]
