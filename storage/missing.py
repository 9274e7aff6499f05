"""Importing an optional package, or saying at once which extra of fastpack installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError


def import_optional(
    module: str, extra: str, needed_for: str = "datasets at s3:// URLs"
) -> ModuleType:
    """The module `module`; `MissingDependencyError` naming `pip install "fastpack[extra]"` if
    it (or a package it imports) is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(
            f"{needed_for} need the Python package {e.name or module!r}, which is not "
            f'installed: pip install "fastpack[{extra}]"'
        ) from e
