"""fastpack.compiler: builds a dataset (tar shards, index, manifest) from images, in parallel,
deterministically, and resumably; to a local directory or to a URL."""

from .build import build
from .errors import BuildDirError, BuildError, SourceError
from .images import PreparedImage, Reject, prepare_image
from .options import BuildOptions, BuildSummary
from .publish import build_to_url

__all__ = [
    "BuildDirError",
    "BuildError",
    "BuildOptions",
    "BuildSummary",
    "PreparedImage",
    "Reject",
    "SourceError",
    "build",
    "build_to_url",
    "prepare_image",
]
