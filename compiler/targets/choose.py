"""`choose_target`: the target that a build's `out` names, chosen once, at the top of `build()`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.storage import RetryPolicy, is_url

from ..options import BuildOptions
from .directory import DirectoryTarget
from .store import StoreTarget
from .target import Target


def choose_target(  # noqa: PLR0913 -- keyword inputs
    out: str,
    source: str,
    options: BuildOptions,
    *,
    staging: Path | None,
    storage_options: Mapping[str, Any] | None,
    retry: RetryPolicy | None,
    keep_staging: bool,
) -> Target:
    """A `StoreTarget` for a URL, else a `DirectoryTarget`."""
    if is_url(out):
        return StoreTarget(
            out,
            options,
            staging=staging,
            storage_options=storage_options,
            retry=retry,
            keep_staging=keep_staging,
        )
    return DirectoryTarget(Path(out), source, options, staging)
