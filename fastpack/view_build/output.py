"""Where views are written: beside their dataset (`views/<name>.fpview`, a local directory or a
URL), or at a path or URL of the user's."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fastpack.formats import FastpackError, View, write_view_file
from fastpack.formats.view import VIEW_SUFFIX, view_file_name
from fastpack.storage import Location, is_url


class ViewWriteError(FastpackError, OSError):
    """A view file could not be written where it was asked for."""


def view_targets(
    dataset: str | os.PathLike[str], views: Sequence[View], output: str | os.PathLike[str] | None
) -> list[str]:
    """Where each of `views` goes: beside the dataset without `output`; else `output` itself
    for one view (unless it is a directory or ends in `/`), `output/<name>.fpview` for several."""
    if output is None:
        root = os.fspath(dataset).rstrip("/")
        return [f"{root}/{view_file_name(v.name)}" for v in views]
    out = os.fspath(output)
    if len(views) == 1 and not out.endswith("/") and (is_url(out) or not Path(out).is_dir()):
        return [out]
    return [f"{out.rstrip('/')}/{v.name}{VIEW_SUFFIX}" for v in views]


def save_views(
    dataset: str | os.PathLike[str],
    views: Sequence[View],
    *,
    output: str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write `views` (`view_targets`): a local file atomically, a URL by one upload (an object
    store shows it whole or not at all). Returns the paths or URLs written."""
    targets = view_targets(dataset, views, output)
    for view, target in zip(views, targets, strict=True):
        if is_url(target):
            _upload(view, target, storage_options)
        else:
            try:
                write_view_file(target, view)
            except OSError as e:
                raise ViewWriteError(
                    f"{target}: cannot write view {view.name!r} ({e.strerror or e}); --output "
                    "writes it elsewhere"
                ) from e
    return targets


def _upload(view: View, url: str, storage_options: Mapping[str, Any] | None) -> None:
    folder, _, name = url.rpartition("/")
    with tempfile.TemporaryDirectory(prefix="fastpack-view-") as tmp:
        local = Path(tmp) / f"{view.name}{VIEW_SUFFIX}"
        write_view_file(local, view)
        Location(folder, storage_options).upload(local, name)
