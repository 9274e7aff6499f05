"""Inputs the compiler tests need beyond tests/conftest.py, and a reader of built datasets."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np
import simplejpeg
from fastpack.formats import DatasetFiles

from tests.conftest import synthetic_rgb


class Quiet(TypedDict):
    """The `BuildOptions` keywords that turn the progress bar off, typed for `**QUIET`."""

    progress: bool


QUIET: Quiet = {"progress": False}


@dataclass(frozen=True)
class StoredSample:
    key: str
    jpg: bytes
    cls: bytes
    label: int
    source: str


def read_dataset(out: Path) -> list[StoredSample]:
    """Every sample of a built dataset, read from its shards through the index offsets."""
    files = DatasetFiles(out)
    index, samples = files.index, []
    shards = {i: files.shard_path(i).read_bytes() for i in range(len(files.manifest.shards))}
    for i in range(len(files)):
        fields = {}
        for name in ("jpg", "cls"):
            shard, offset, size = index.locate(i, name, len(shards[int(index.shard[i])]))
            fields[name] = shards[shard][offset : offset + size]
        samples.append(
            StoredSample(
                index.key(i), fields["jpg"], fields["cls"], int(index.label[i]), index.source(i)
            )
        )
    return samples


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` by relative path: for byte-identical comparisons."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def exif_app1(orientation: int, byte_order: str = "<") -> bytes:
    """An APP1 segment holding a TIFF IFD0 with one Orientation (0x0112, SHORT) entry."""
    head = b"II" if byte_order == "<" else b"MM"
    tiff = head + struct.pack(byte_order + "HI", 42, 8) + struct.pack(byte_order + "H", 1)
    tiff += struct.pack(byte_order + "HHIHH", 0x0112, 3, 1, orientation, 0)
    tiff += struct.pack(byte_order + "I", 0)
    payload = b"Exif\x00\x00" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def with_orientation(jpeg: bytes, orientation: int, byte_order: str = "<") -> bytes:
    """The JPEG with an EXIF segment right after its SOI marker."""
    return jpeg[:2] + exif_app1(orientation, byte_order) + jpeg[2:]


def gray_jpeg(height: int = 40, width: int = 56, seed: int = 0) -> bytes:
    gray = synthetic_rgb(height, width, seed)[..., :1].copy()
    return bytes(simplejpeg.encode_jpeg(gray, 90, colorspace="GRAY", colorsubsampling="Gray"))


def cmyk_jpeg(height: int = 40, width: int = 56, seed: int = 0) -> bytes:
    """A four-component (Adobe YCCK) JPEG, as print workflows produce."""
    rgb = synthetic_rgb(height, width, seed)
    cmyk = np.dstack([rgb, np.full((height, width), 255, np.uint8)])
    return bytes(simplejpeg.encode_jpeg(np.ascontiguousarray(cmyk), 92, colorspace="CMYK"))


def scan_data_at(data: bytes) -> int:
    """Where the entropy-coded data of the first scan starts."""
    sos = data.index(b"\xff\xda")
    return sos + 2 + int.from_bytes(data[sos + 2 : sos + 4], "big")


def with_noise_in_scan(data: bytes, seed: int) -> bytes:
    """`data` with 200 bytes of its entropy-coded data replaced by noise free of 0xFF: the
    marker structure stays whole, a strict decode fails."""
    noise = np.random.default_rng(seed).integers(0, 255, 200, dtype=np.uint8).tobytes()
    start = scan_data_at(data) + 200
    while data[start - 1] == 0xFF:  # keep a stuffed 0xFF 0x00 whole
        start += 1
    return data[:start] + noise + data[start + 200 :]
