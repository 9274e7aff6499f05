"""The build's private directory inside its output: plan, shard records and index parts.

It exists only while a build is unfinished (a resume reads it) and is never part of a dataset.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

BUILD_DIR = ".fastpack-build"


def temp_path(path: Path, suffix: str = ".tmp") -> Path:
    """A temporary name for `path`, unique to this host and process: on a shared file system,
    two machines (or a killed build's job and the one that redoes it) never write the same
    temporary file. Ends in `suffix`."""
    return path.with_name(f"{path.name}.{socket.gethostname()}.{os.getpid()}{suffix}")
