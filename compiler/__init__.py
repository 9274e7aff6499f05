"""fastpack.compiler: builds a dataset (tar shards, index, manifest) from images, in parallel,
deterministically, and resumably."""

from .build import build
from .image_policy import PreparedImage, Reject, prepare_image
from .options import BuildOptions, BuildSummary
from .upload import build_to_url

__all__ = [
    "BuildOptions",
    "BuildSummary",
    "PreparedImage",
    "Reject",
    "build",
    "build_to_url",
    "prepare_image",
]
