"""A read-only file object over consecutive byte chunks (an object read range by range)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any


class ChunkStream(io.RawIOBase):
    """The bytes of `chunks`, in order; holds one chunk at a time."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = chunks
        self._chunk = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._chunk:
            data = next(self._chunks, None)
            if data is None:
                return 0
            self._chunk = memoryview(data)
        view = memoryview(buffer).cast("B")
        size = min(len(view), len(self._chunk))
        view[:size] = self._chunk[:size]
        self._chunk = self._chunk[size:]
        return size

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
        super().close()
