"""URLs and the fsspec filesystems behind them (`s3://bucket/prefix`, `gs://`, `az://`, ...).

Endpoint and credentials come from fsspec's usual sources: the environment (`AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, ...), fsspec's configuration, or `storage_options`
(for s3fs e.g. `{"key": ..., "secret": ..., "client_kwargs": {"endpoint_url": ...}}`).
fsspec is imported on first use: install `fastpack[s3]`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# One filesystem per process and set of options, never freed before the process ends: an
# fsspec filesystem finalized early in a DataLoader worker closes its connections from the wrong
# event loop, and one inherited through fork must never be used (its loop did not fork).
_FILESYSTEMS: dict[tuple[int, str], Any] = {}


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for `scheme://...` other than `file://`."""
    text = os.fspath(path)
    return "://" in text and not text.startswith("file://")


def _import_fsspec() -> Any:
    try:
        import fsspec  # noqa: PLC0415 - an optional dependency, imported on first use
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("datasets at URLs need fsspec: pip install 'fastpack[s3]'") from e
    return fsspec


def filesystem(url: str, storage_options: Mapping[str, Any]) -> tuple[Any, str]:
    """`(filesystem, path)` for `url`, the path without its scheme and trailing slash; the
    filesystem is shared by this process's URLs with the same scheme and options."""
    fsspec = _import_fsspec()
    protocol = url.split("://", 1)[0]
    key = (os.getpid(), f"{protocol} {sorted(storage_options.items())!r}")
    if key not in _FILESYSTEMS:
        options = {"skip_instance_cache": True, **storage_options}
        _FILESYSTEMS[key] = fsspec.core.url_to_fs(f"{protocol}://", **options)[0]
    path: str = fsspec.core.strip_protocol(url)
    return _FILESYSTEMS[key], path.rstrip("/")
