"""fastpack.compiler: builds a dataset (tar shards, index, manifest) from images, in parallel,
deterministically, and resumably; to a local directory or to a URL."""

from .adopt import IndexOptions, index_shards
from .append import AppendError, AppendLockedError, AppendSummary, append
from .build import build
from .build_schema import BuildSchema, FieldSource, parse_build_schema, read_build_schema
from .errors import (
    BuildDirError,
    BuildError,
    BuildMemoryError,
    OutputError,
    SourceError,
    WorkerDiedError,
)
from .images import PreparedImage, Reject, prepare_image
from .options import BuildOptions, BuildSummary

__all__ = [
    "AppendError",
    "AppendLockedError",
    "AppendSummary",
    "BuildDirError",
    "BuildError",
    "BuildMemoryError",
    "BuildOptions",
    "BuildSchema",
    "BuildSummary",
    "FieldSource",
    "IndexOptions",
    "OutputError",
    "PreparedImage",
    "Reject",
    "SourceError",
    "WorkerDiedError",
    "append",
    "build",
    "index_shards",
    "parse_build_schema",
    "prepare_image",
    "read_build_schema",
]
