"""The checksums the manifest records: SHA-256 of whole files (formats/SPEC.md section 2)."""

from __future__ import annotations

import hashlib
import os

_CHUNK = 8 << 20


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 8 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
