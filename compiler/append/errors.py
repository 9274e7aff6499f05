"""The errors of an append."""

from __future__ import annotations

from ..errors import BuildError


class AppendError(BuildError):
    """An append cannot go on: a dataset it cannot grow, options other than the dataset's, a
    source of other fields, an interrupted append to resume, a damaged staging directory."""


class AppendLockedError(AppendError):
    """Another append holds the dataset's `append.lock`: the message names its host, process
    and start, and how to clear it."""
