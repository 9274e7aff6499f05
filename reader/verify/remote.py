"""`verify_remote`: `verify_dataset` for a dataset at a URL, on a temporary copy of its files.

The files are copied as they are (no checksum enforced while copying), so that the report lists
every problem, as it does for a local dataset; its messages name the URL, not the copy.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    REJECTS_NAME,
    FastpackError,
    manifest_from_text,
)
from fastpack.storage import Location, RetryPolicy
from fastpack.storage.retry import retry_call

from ..remote import read_manifest_bytes
from .local import VerifyReport, verify_dataset


def _copy(location: Location, name: str, out: Path, retry: RetryPolicy) -> None:
    """Copy object `name` as it is; a missing one is left missing (the verify reports it)."""
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    try:
        retry_call(
            lambda: location.fs.get_file(location.path(name), str(out / name)),
            location.url_of(name),
            retry,
            permanent=(FileNotFoundError,),
        )
    except FileNotFoundError:
        (out / name).unlink(missing_ok=True)


def copy_as_is(location: Location, out: Path, retry: RetryPolicy) -> None:
    """The manifest, index, shards, DALI indexes and rejects at `location`, into `out`."""
    text = read_manifest_bytes(location, retry)
    (out / MANIFEST_NAME).write_bytes(text)
    manifest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
    names = [INDEX_NAME, REJECTS_NAME]
    names += [name for s in manifest.shards for name in (s.name, s.index_name)]
    for name in names:
        _copy(location, name, out, retry)


def verify_remote(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    decode: bool = False,
    progress: bool = False,
    retry: RetryPolicy | None = None,
) -> VerifyReport:
    """Check the dataset at `url` as `verify_dataset` checks a local one."""
    location = Location(url, storage_options)
    with tempfile.TemporaryDirectory(prefix="fastpack-verify-") as tmp:
        try:
            copy_as_is(location, Path(tmp), retry or RetryPolicy())
        except FastpackError as e:
            report = VerifyReport(path=Path(tmp))
            report.add_error(e)
            return report
        report = verify_dataset(tmp, decode=decode, progress=progress)
    report.problems = [p.replace(tmp, location.url) for p in report.problems]
    return report
