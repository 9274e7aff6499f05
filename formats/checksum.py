"""The checksums the manifest records (formats/SPEC.md section 2): SHA-256 of whole files, and
CRC-32C (Castagnoli, unmasked) of each shard, what downloads check (google-crc32c: hardware
accelerated, about a fifth of SHA-256's CPU per byte: 0.14 against 0.71 ms per MiB,
benchmarks/streaming/STREAMING.md)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import Any

import google_crc32c
import numpy as np

_CHUNK = 8 << 20


def _chunks(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The bytes of a file, in 8 MiB chunks."""
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 8 MiB chunks."""
    digest = hashlib.sha256()
    for chunk in _chunks(path):
        digest.update(chunk)
    return digest.hexdigest()


def crc32c_extend(crc: int, data: Any) -> int:
    """CRC-32C of the bytes so far (`crc`, 0 at the start) and then the buffer `data`."""
    view = np.frombuffer(data, np.uint8)  # google-crc32c takes an array, not every buffer
    return int(google_crc32c.extend(crc, view)) if view.size else crc


def file_crc32c(path: str | os.PathLike[str]) -> int:
    """CRC-32C of a file, read in 8 MiB chunks."""
    crc = 0
    for chunk in _chunks(path):
        crc = crc32c_extend(crc, chunk)
    return crc


def file_sha256_crc32c(path: str | os.PathLike[str]) -> tuple[str, int]:
    """Hex SHA-256 and CRC-32C of a file, in one pass of 8 MiB chunks."""
    digest, crc = hashlib.sha256(), 0
    for chunk in _chunks(path):
        digest.update(chunk)
        crc = crc32c_extend(crc, chunk)
    return digest.hexdigest(), crc
