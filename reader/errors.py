"""The errors of the reader that are not about the format (those are in `fastpack.formats`)."""

from __future__ import annotations

from fastpack.formats import FastpackError


class SharedMemoryError(FastpackError, MemoryError):
    """The loader's shared-memory batch buffers do not fit in the machine's shared memory."""
