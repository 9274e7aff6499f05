"""The errors of storage access."""

from __future__ import annotations

from fastpack.formats import FastpackError


class FetchError(FastpackError, OSError):
    """A remote object stays unavailable (or keeps arriving incomplete) after the retries."""


class MissingDependencyError(FastpackError, ModuleNotFoundError):
    """An optional package that the requested storage or reader needs is not installed; the
    message names the extra that installs it. Never retried."""
