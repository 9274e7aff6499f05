"""The errors of a build."""

from __future__ import annotations

from fastpack.formats import FastpackError


class BuildError(FastpackError):
    """A build cannot go on (bad source, --strict reject, incompatible --resume)."""


class SourceError(BuildError, ValueError):
    """The build's source is missing or malformed."""


class BuildDirError(BuildError):
    """The private directory of an unfinished build (`.fastpack-build/`: plan, shard records,
    index parts) lacks a file the build needs or holds one it cannot read."""
