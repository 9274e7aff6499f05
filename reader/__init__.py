"""fastpack.reader: reading fastpack datasets, map-style (`Dataset` + `make_loader`), streamed
from a URL (`StreamingDataset`), through DALI (`make_dali_loader`) or decoded on the trainer's
GPU by nvImageCodec (`make_nvimgcodec_loader`); each sample is the fields
asked for (`fields=`: default the image and the label).

`import fastpack.reader` needs neither torch nor DALI; the loaders import them when called.
"""

from fastpack.storage import RetryPolicy

from .dali import DaliLoader, DaliOptions, make_dali_loader
from .errors import (
    DaliReadError,
    LoaderStateError,
    MissingDependencyError,
    MissingFieldError,
    ShardUnavailableError,
    SharedMemoryError,
)
from .fields import Padded
from .image import IMAGENET_MEAN, IMAGENET_STD, CenterCrop, RandomResizedCrop, Transform, to_float
from .loader import make_loader
from .map_style import Dataset
from .mix import Mix
from .nvimgcodec_loader import DeviceUnavailableError, NvImageCodecLoader, make_nvimgcodec_loader
from .order import EpochBatchSampler
from .remote import fetch_dataset, read_manifest_at
from .streaming import FetchOptions, StreamingDataset
from .verify import VerifyReport, verify_dataset, verify_remote, verify_view
from .views import list_views, open_view

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "CenterCrop",
    "DaliLoader",
    "DaliOptions",
    "DaliReadError",
    "Dataset",
    "DeviceUnavailableError",
    "EpochBatchSampler",
    "FetchOptions",
    "LoaderStateError",
    "MissingDependencyError",
    "MissingFieldError",
    "Mix",
    "NvImageCodecLoader",
    "Padded",
    "RandomResizedCrop",
    "RetryPolicy",
    "ShardUnavailableError",
    "SharedMemoryError",
    "StreamingDataset",
    "Transform",
    "VerifyReport",
    "fetch_dataset",
    "list_views",
    "make_dali_loader",
    "make_loader",
    "make_nvimgcodec_loader",
    "open_view",
    "read_manifest_at",
    "to_float",
    "verify_dataset",
    "verify_remote",
    "verify_view",
]
