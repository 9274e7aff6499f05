"""fastpack: compile labeled images into tar shards with a memory-mapped index, and read them fast.

`import fastpack` is cheap: the compiler and the reader (and torch, which the loader uses) are
imported on first use of one of their names.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .formats import FastpackError as FastpackError

# The names imported on first use, by the module they come from: the one list of them.
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "fastpack.compiler": (
        "BuildError",
        "BuildOptions",
        "BuildSchema",
        "BuildSummary",
        "SourceError",
        "build",
        "read_build_schema",
    ),
    "fastpack.reader": (
        "CenterCrop",
        "Dataset",
        "Mix",
        "Padded",
        "RandomResizedCrop",
        "SharedMemoryError",
        "StreamingDataset",
        "VerifyReport",
        "make_loader",
        "to_float",
        "verify_dataset",
    ),
    "fastpack.storage": ("FetchError",),
}
_LAZY: dict[str, str] = {name: module for module, names in _LAZY_MODULES.items() for name in names}
__all__ = ["FastpackError", "__version__", *_LAZY]  # noqa: PLE0604 -- from a table: the lazy names
__all__.sort()

if TYPE_CHECKING:
    # Type checkers cannot run the table: they read its names here, as imports
    # (tests/test_top_package.py checks that the two list the same names).
    from .compiler import BuildError as BuildError
    from .compiler import BuildOptions as BuildOptions
    from .compiler import BuildSchema as BuildSchema
    from .compiler import BuildSummary as BuildSummary
    from .compiler import SourceError as SourceError
    from .compiler import build as build
    from .compiler import read_build_schema as read_build_schema
    from .reader import CenterCrop as CenterCrop
    from .reader import Dataset as Dataset
    from .reader import Mix as Mix
    from .reader import Padded as Padded
    from .reader import RandomResizedCrop as RandomResizedCrop
    from .reader import SharedMemoryError as SharedMemoryError
    from .reader import StreamingDataset as StreamingDataset
    from .reader import VerifyReport as VerifyReport
    from .reader import make_loader as make_loader
    from .reader import to_float as to_float
    from .reader import verify_dataset as verify_dataset
    from .storage import FetchError as FetchError

try:
    __version__ = version("fastpack")
except PackageNotFoundError:  # run from a source tree that is not installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastpack' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
