"""fastpack.reader: map-style random access to fastpack datasets, with fast JPEG transforms.

`import fastpack.reader` needs no torch; `make_loader` and `to_float` import it when called.
"""

from ._remote_verify import verify_remote
from ._retry import RetryPolicy
from .dali import DaliLoader, make_dali_loader
from .dataset import Dataset
from .decode import Box, DecodeOptions
from .draws import sample_draws
from .loader import make_loader
from .normalize import IMAGENET_MEAN, IMAGENET_STD, to_float
from .remote import fetch_dataset, is_url, read_manifest_at, read_remote_manifest
from .sampler import EpochBatch, EpochBatchSampler
from .shard_cache import ShardCache
from .shards import MmapShardReader, PreadShardReader, ShardReader
from .stream_source import FetchOptions
from .streaming import StreamingDataset
from .transforms import CenterCrop, RandomResizedCrop, Transform, random_resized_box
from .verify import VerifyReport, verify_dataset

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "Box",
    "CenterCrop",
    "DaliLoader",
    "Dataset",
    "DecodeOptions",
    "EpochBatch",
    "EpochBatchSampler",
    "FetchOptions",
    "MmapShardReader",
    "PreadShardReader",
    "RandomResizedCrop",
    "RetryPolicy",
    "ShardCache",
    "ShardReader",
    "StreamingDataset",
    "Transform",
    "VerifyReport",
    "fetch_dataset",
    "is_url",
    "make_dali_loader",
    "make_loader",
    "random_resized_box",
    "read_manifest_at",
    "read_remote_manifest",
    "sample_draws",
    "to_float",
    "verify_dataset",
    "verify_remote",
]
