"""fastpack.reader: map-style random access to fastpack datasets, with fast JPEG transforms.

`import fastpack.reader` needs no torch; `make_loader` and `to_float` import it when called.
"""

from .dataset import Dataset
from .decode import Box, DecodeOptions
from .loader import make_loader
from .normalize import IMAGENET_MEAN, IMAGENET_STD, to_float
from .sampler import EpochBatch, EpochBatchSampler
from .shards import MmapShardReader, ShardReader
from .transforms import CenterCrop, RandomResizedCrop, Transform, random_resized_box, sample_rng
from .verify import VerifyReport, verify_dataset

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "Box",
    "CenterCrop",
    "Dataset",
    "DecodeOptions",
    "EpochBatch",
    "EpochBatchSampler",
    "MmapShardReader",
    "RandomResizedCrop",
    "ShardReader",
    "Transform",
    "VerifyReport",
    "make_loader",
    "random_resized_box",
    "sample_rng",
    "to_float",
    "verify_dataset",
]
