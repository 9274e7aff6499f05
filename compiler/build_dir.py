"""The build's private directory inside its output: plan, shard records and index parts.

It exists only while a build is unfinished (a resume reads it) and is never part of a dataset.
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

from fastpack.storage import default_cache_dir

BUILD_DIR = ".fastpack-build"


def temp_path(path: Path, suffix: str = ".tmp") -> Path:
    """A temporary name for `path`, unique to this host and process: on a shared file system,
    two machines (or a killed build's job and the one that redoes it) never write the same
    temporary file. Ends in `suffix`."""
    return path.with_name(f"{path.name}.{socket.gethostname()}.{os.getpid()}{suffix}")


def default_staging_dir(url: str) -> Path:
    """Where a build to `url` is staged unless told otherwise: a directory named after the URL
    under `$FASTPACK_CACHE_DIR` (else `~/.cache/fastpack`), so that a resume finds it."""
    cache = default_cache_dir()
    return cache / "staging" / hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
