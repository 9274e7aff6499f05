"""Opening a source for its scan in a test, and reading back what its rows point at."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
from fastpack.compiler.sources import PlanRow, SourceOptions, SourceScan, detect_kind, open_source
from fastpack.compiler.sources.sample_fields import FileRef, MemberRef, unpack_fields
from fastpack.compiler.sources.scan import NO_CONTAINER


def scan_all(
    source: Path | str, work_dir: Path, options: SourceOptions | None = None, kind: str = "auto"
) -> tuple[SourceScan, list[PlanRow]]:
    """The scan of `source` (detected unless `kind`) and all its rows."""
    work_dir.mkdir(parents=True, exist_ok=True)
    kind = detect_kind(source, "auto") if kind == "auto" else kind
    scan = open_source(source, kind, work_dir, options)
    return scan, list(scan.rows)


def container_bytes(scan: SourceScan, container: int, offset: int, size: int) -> bytes:
    path = os.path.join(scan.root, scan.containers[container])
    with open(path, "rb") as file:
        file.seek(offset)
        return file.read(size)


def image_bytes(scan: SourceScan, row: PlanRow) -> bytes:
    """The bytes of a row's image: a file, or a container's range."""
    if not scan.containers or row.container == NO_CONTAINER:
        return (scan.root / os.fsdecode(row.source)).read_bytes()
    return container_bytes(scan, row.container, row.offset, row.size)


def resolved(scan: SourceScan, row: PlanRow) -> dict[str, Any]:
    """A row's fields with references replaced by the bytes they point at."""
    values = unpack_fields(row.fields)
    for name, value in values.items():
        if isinstance(value, MemberRef):
            values[name] = container_bytes(scan, value.container, value.offset, value.size)
        elif isinstance(value, FileRef):
            values[name] = (scan.root / value.path).read_bytes()
    return values


def png_pixels(data: bytes) -> npt.NDArray[Any]:
    """A PNG's pixels as stored (a label map keeps its values and bit depth)."""
    pixels = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if pixels is None:
        raise ValueError(f"not a PNG that OpenCV decodes (it starts with {data[:8]!r})")
    return np.asarray(pixels)
