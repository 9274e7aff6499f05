"""fastpack: compile labeled images into tar shards with a memory-mapped index, and read them fast.

`import fastpack` is cheap: the compiler and the reader (and torch, which the loader uses) are
imported on first use of one of their names.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .formats import FastpackError

if TYPE_CHECKING:
    from .compiler import (
        BuildError,
        BuildOptions,
        BuildSchema,
        BuildSummary,
        SourceError,
        build,
        read_build_schema,
    )
    from .reader import (
        CenterCrop,
        Dataset,
        Mix,
        Padded,
        RandomResizedCrop,
        SharedMemoryError,
        VerifyReport,
        make_loader,
        to_float,
        verify_dataset,
    )
    from .storage import FetchError

try:
    __version__ = version("fastpack")
except PackageNotFoundError:  # run from a source tree that is not installed
    __version__ = "0+unknown"

_LAZY: dict[str, str] = {
    "BuildOptions": "fastpack.compiler",
    "BuildSummary": "fastpack.compiler",
    "build": "fastpack.compiler",
    "BuildSchema": "fastpack.compiler",
    "read_build_schema": "fastpack.compiler",
    "Padded": "fastpack.reader",
    "CenterCrop": "fastpack.reader",
    "Dataset": "fastpack.reader",
    "Mix": "fastpack.reader",
    "RandomResizedCrop": "fastpack.reader",
    "VerifyReport": "fastpack.reader",
    "make_loader": "fastpack.reader",
    "to_float": "fastpack.reader",
    "verify_dataset": "fastpack.reader",
    "BuildError": "fastpack.compiler",
    "SourceError": "fastpack.compiler",
    "FetchError": "fastpack.storage",
    "SharedMemoryError": "fastpack.reader",
}

__all__ = [
    "BuildError",
    "BuildOptions",
    "BuildSchema",
    "BuildSummary",
    "CenterCrop",
    "Dataset",
    "FastpackError",
    "FetchError",
    "Mix",
    "Padded",
    "RandomResizedCrop",
    "SharedMemoryError",
    "SourceError",
    "VerifyReport",
    "__version__",
    "build",
    "make_loader",
    "read_build_schema",
    "to_float",
    "verify_dataset",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastpack' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
