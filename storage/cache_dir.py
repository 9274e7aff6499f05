"""The node-local directory where fastpack keeps what it fetched or staged."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "FASTPACK_CACHE_DIR"


def default_cache_dir() -> Path:
    """`$FASTPACK_CACHE_DIR`, else `~/.cache/fastpack`: streamed shards live under it, builds to
    a URL are staged under its `staging/`."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "fastpack")
