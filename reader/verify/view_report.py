"""`verify_view`: check view files lying anywhere (a path or URL) against the dataset they were
made for, without reading its shards (formats/SPEC.md section 9)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, DatasetNotFoundError, FastpackError
from fastpack.formats.manifest import manifest_from_text
from fastpack.storage import Location, is_url

from ..remote import read_manifest_bytes
from .local import VerifyReport
from .manifest_checks import manifest_text_problems
from .views import view_problems


def verify_view(
    dataset: str | os.PathLike[str],
    views: Iterable[str | os.PathLike[str]],
    storage_options: Mapping[str, Any] | None = None,
) -> VerifyReport:
    """Check the view files `views` (local paths or URLs, lying anywhere) against the dataset at
    `dataset` (a directory or URL), whose manifest is checked too (a view names its dataset by
    the manifest's digest); the shards are not read."""
    report = VerifyReport(path=os.fspath(dataset))
    manifest_where, text = _manifest_text(dataset, storage_options, report)
    if text is None:
        return report
    for problem in manifest_text_problems(text, manifest_where):
        report.add(problem)
    try:
        manifest = manifest_from_text(text, manifest_where)
    except FastpackError as e:
        report.add_error(e)
        return report
    for view in views:
        where, data = _read(view, storage_options)
        if data is None:
            report.add(f"{where}: view file not found")
            continue
        for problem in view_problems(where, data, manifest, None):
            report.add(problem)
        report.views_checked += 1
    return report


def _manifest_text(
    dataset: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None,
    report: VerifyReport,
) -> tuple[str, bytes | None]:
    if is_url(dataset):
        location = Location(os.fspath(dataset), storage_options)
        where = location.url_of(MANIFEST_NAME)
        try:
            return where, read_manifest_bytes(location, location.retry)
        except (FastpackError, OSError) as e:
            report.add_error(e)
            return where, None
    path = Path(dataset) / MANIFEST_NAME
    try:
        return str(path), path.read_bytes()
    except OSError as e:
        report.add(f"{path}: no manifest; not a fastpack dataset ({type(e).__name__})")
        return str(path), None


def _read(
    view: str | os.PathLike[str], storage_options: Mapping[str, Any] | None
) -> tuple[str, bytes | None]:
    """(where, bytes) of a view file; None where there is no such file."""
    if not is_url(view):
        try:
            return os.fspath(view), Path(view).read_bytes()
        except FileNotFoundError:
            return os.fspath(view), None
    folder, _, name = os.fspath(view).rpartition("/")
    location = Location(folder, storage_options)
    try:
        return location.url_of(name), location.read_bytes(name)
    except DatasetNotFoundError:
        return location.url_of(name), None
