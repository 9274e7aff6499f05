"""URLs and the fsspec filesystems behind them (`s3://bucket/prefix`, `gs://`, `az://`, ...).

Endpoint and credentials come from fsspec's usual sources: the environment (`AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, ...), fsspec's configuration, or `storage_options`
(for s3fs e.g. `{"key": ..., "secret": ..., "client_kwargs": {"endpoint_url": ...}}`).
fsspec is imported on first use: install `fastpack[s3]` (a missing package raises
`MissingDependencyError` at once, naming it).

Retries are fastpack's (`retry.RetryPolicy`): an S3 filesystem is made with s3fs's own retry
loop at one attempt and, unless `config_kwargs` sets `retries`, botocore's at one attempt too.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

from .errors import MissingDependencyError
from .missing import import_optional

# One filesystem per process and set of options, never freed before the process ends: an
# fsspec filesystem finalized early in a DataLoader worker closes its connections from the wrong
# event loop, and one inherited through fork must never be used (its loop did not fork).
_FILESYSTEMS: dict[tuple[int, str], Any] = {}
S3_PROTOCOLS = ("s3", "s3a")  # the URL schemes that name an S3 bucket
_BOTOCORE_RETRIES = {"total_max_attempts": 1}


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for `scheme://...` other than `file://`."""
    text = os.fspath(path)
    return "://" in text and not text.startswith("file://")


def _import_fsspec(url: str) -> Any:
    return import_optional("fsspec", "s3", f"URLs such as {url}")


def _missing_implementation(url: str, protocol: str, error: ImportError) -> MissingDependencyError:
    """fsspec's word that the package of `protocol` is missing, as fastpack's: the `s3` extra
    for S3, otherwise the package fsspec names."""
    if protocol in S3_PROTOCOLS:
        return MissingDependencyError(
            f"{url}: S3 URLs need s3fs and obstore, not installed here ({error}): "
            'pip install "fastpack[s3]"'
        )
    return MissingDependencyError(
        f"{url}: {protocol}:// URLs need a package that is not installed: {error}"
    )


def filesystem(url: str, storage_options: Mapping[str, Any]) -> tuple[Any, str]:
    """`(filesystem, path)` for `url`, the path without its scheme and trailing slash; the
    filesystem is shared by this process's URLs with the same scheme and options."""
    fsspec = _import_fsspec(url)
    protocol = url.split("://", 1)[0]
    key = (os.getpid(), f"{protocol} {sorted(storage_options.items())!r}")
    if key not in _FILESYSTEMS:
        try:
            options = _options(protocol, storage_options)
            fs = fsspec.core.url_to_fs(f"{protocol}://", **options)[0]
        except ImportError as e:
            raise _missing_implementation(url, protocol, e) from e
        if protocol in S3_PROTOCOLS:
            fs.retries = 1  # s3fs's retry loop (not an option): one attempt
        _FILESYSTEMS[key] = fs
    path: str = fsspec.core.strip_protocol(url)
    return _FILESYSTEMS[key], path.rstrip("/")


def _options(protocol: str, storage_options: Mapping[str, Any]) -> dict[str, Any]:
    """`storage_options` with fastpack's defaults: no instance cache and, for S3, one botocore
    attempt per request unless `config_kwargs` sets `retries`."""
    options = {"skip_instance_cache": True, **storage_options}
    if protocol in S3_PROTOCOLS:
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("retries", dict(_BOTOCORE_RETRIES))
        options["config_kwargs"] = config
        if "session" not in options:
            options["session"] = _s3_session()
    return options


@functools.cache
def _s3_session() -> Any:
    """The botocore (aiobotocore) session of this process's S3 filesystems, made once and
    inherited by the processes it forks: its loaded service models make their clients in
    0.05 s of CPU instead of 0.3 s each (benchmarks/streaming/STREAMING.md)."""
    from aiobotocore.session import AioSession  # noqa: PLC0415 -- optional: s3fs

    return AioSession()
