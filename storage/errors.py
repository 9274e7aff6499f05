"""The errors of storage access."""

from __future__ import annotations

from fastpack.formats import FastpackError


class FetchError(FastpackError, OSError):
    """A remote object stays unavailable (or keeps arriving incomplete) after the retries."""
