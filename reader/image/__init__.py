"""Images: JPEG decode of only a crop's window at a DCT scale (`decoder()` says which decoder
runs), crop-and-resize transforms, their random draws, the masks and boxes that follow an image
through them, and the float conversion that belongs on the GPU."""

from .crop_decode import decoder
from .decode import Box, DecodeOptions, decode_png
from .draws import sample_draws
from .geometry import Crop, crop_boxes, crop_mask
from .guard import ImageDecodeError
from .normalize import IMAGENET_MEAN, IMAGENET_STD, to_float
from .transforms import (
    CenterCrop,
    GeometryTransform,
    PlannedTransform,
    RandomResizedCrop,
    Transform,
    WindowPlan,
    random_resized_box,
)

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "Box",
    "CenterCrop",
    "Crop",
    "DecodeOptions",
    "GeometryTransform",
    "ImageDecodeError",
    "PlannedTransform",
    "RandomResizedCrop",
    "Transform",
    "WindowPlan",
    "crop_boxes",
    "crop_mask",
    "decode_png",
    "decoder",
    "random_resized_box",
    "sample_draws",
    "to_float",
]
