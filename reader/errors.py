"""The errors of the reader that are not about the format (those are in `fastpack.formats`)."""

from __future__ import annotations

from fastpack.formats import FastpackError, ShardFormatError
from fastpack.storage import FetchError, MissingDependencyError

__all__ = [
    "DaliReadError",
    "LoaderStateError",
    "MissingDependencyError",  # defined with storage, raised by the reader too
    "MissingFieldError",
    "ShardUnavailableError",
    "SharedMemoryError",
]


class SharedMemoryError(FastpackError, MemoryError):
    """The loader's shared-memory batch buffers do not fit in the machine's shared memory."""


class LoaderStateError(FastpackError, ValueError):
    """A loader's saved state cannot be loaded: a field is missing, unknown, of another type or
    out of range, the state is of another format or version, or it was saved over other data
    or settings. The message names the field, what was expected and what was found."""


class MissingFieldError(FastpackError, ValueError):
    """A dataset's samples lack a field (member extension) that the reader needs."""


class DaliReadError(ShardFormatError, RuntimeError):
    """DALI stopped reading a dataset's shards: a damaged tar, `.idx` or image (the message keeps
    DALI's words, which say which). A `ShardFormatError`, as the other readers raise for a
    payload that does not decode."""


class ShardUnavailableError(FetchError):
    """A remote shard stays unavailable after the retries (throttled, reset or unreachable); the
    message names the shard's number, its URL and the last error."""
