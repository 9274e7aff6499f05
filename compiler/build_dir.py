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


def _named_after(out: str) -> str:
    return hashlib.sha256(out.rstrip("/").encode()).hexdigest()[:16]


def default_staging_dir(url: str) -> Path:
    """Where a build to `url` is staged unless told otherwise: a directory named after the URL
    under `$FASTPACK_CACHE_DIR` (else `~/.cache/fastpack`), so that a resume finds it."""
    return default_cache_dir() / "staging" / _named_after(url)


def node_plan_dir(out: str, rank: int | None, staging: Path | None) -> Path:
    """Where node `rank` of a build into `out` keeps its plan: `staging`, else a directory named
    after the output and the rank under `$FASTPACK_CACHE_DIR` (else `~/.cache/fastpack`), so
    that a resume of the same node finds it and two ranks never share one."""
    if staging is not None:
        return staging
    return default_cache_dir() / "plans" / f"{_named_after(out)}-node{rank}"
