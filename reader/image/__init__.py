"""Images: JPEG decode with DCT scaling, crop-and-resize transforms, their random draws, and the
float conversion that belongs on the GPU."""

from .decode import Box, DecodeOptions
from .draws import sample_draws
from .normalize import IMAGENET_MEAN, IMAGENET_STD, to_float
from .transforms import CenterCrop, RandomResizedCrop, Transform, random_resized_box

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "Box",
    "CenterCrop",
    "DecodeOptions",
    "RandomResizedCrop",
    "Transform",
    "random_resized_box",
    "sample_draws",
    "to_float",
]
