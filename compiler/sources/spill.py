"""Bytes a scan sets aside for the shard jobs (Parquet cells, rendered masks): one local file in
the build directory, appended to while the scan streams, read by offset like a source tar."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from .sample_fields import MemberRef

SPILL_DIR = "sources"


class SpillFile:
    """Appends byte strings to `<work_dir>/sources/<name>`, container number `container` of
    its scan; each `add` returns where its bytes landed. The file goes when the build ends."""

    def __init__(self, work_dir: Path, name: str, container: int) -> None:
        self.path = work_dir / SPILL_DIR / name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.container = container
        self._file = self.path.open("wb")
        self._size = 0

    def add(self, data: bytes | memoryview) -> MemberRef:
        ref = MemberRef(self.container, self._size, len(data))
        self._file.write(data)
        self._size += len(data)
        return ref

    def close(self) -> None:
        """Flush to disk (the shard jobs read it from other processes)."""
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()

    def __enter__(self) -> SpillFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
