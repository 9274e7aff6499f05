"""Opening a view (formats/SPEC.md section 8) for a dataset a loader reads: by name beside the
dataset, by path or URL, or as a `View` already in memory; always checked against the dataset,
and a view made on another version of it (section 11) refused with a message that names that
version."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import (
    VIEWS_DIR,
    DatasetNotFoundError,
    FastpackError,
    Manifest,
    View,
    ViewMismatchError,
    read_view_file,
)
from fastpack.formats.view import (
    VIEW_SUFFIX,
    check_view_dataset,
    is_view_name,
    view_file_name,
    view_from_bytes,
)
from fastpack.storage import Location, is_url

from .versions import version_of

ViewSpec = str | os.PathLike[str] | View


def open_view(
    dataset_root: str | os.PathLike[str],
    manifest: Manifest,
    view: ViewSpec,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> View:
    """The view `view` of the dataset at `dataset_root` (a directory or URL) whose manifest is
    `manifest`: a name (no `/`, no `.fpview`), looked up at `<root>/views/<name>.fpview`; a path
    or URL of a view file; or a `View`. `ViewMismatchError` if it was made for another dataset,
    or for another version of this one (the message names it and how to read it);
    `DatasetNotFoundError` naming the place looked at (and the views there) if there is none."""
    if isinstance(view, View):
        return _checked(view, dataset_root, manifest, f"view {view.name!r}", storage_options)
    text = os.fspath(view)
    root = os.fspath(dataset_root).rstrip("/")
    by_name = is_view_name(text) and not text.endswith(VIEW_SUFFIX)
    target = f"{root}/{view_file_name(text)}" if by_name else text
    try:
        found = read_view_at(target, storage_options)
    except DatasetNotFoundError as e:
        if not by_name:
            raise
        names = list_views(root, storage_options)
        there = f": {', '.join(names)}" if names else " (none)"
        raise DatasetNotFoundError(
            f"{target}: no view {text!r} beside the dataset; the views there are{there}"
        ) from e
    return _checked(found, dataset_root, manifest, target, storage_options)


def _checked(
    view: View,
    dataset_root: str | os.PathLike[str],
    manifest: Manifest,
    where: str,
    storage_options: Mapping[str, Any] | None,
) -> View:
    """`view` if it was made on the dataset version `manifest` describes; else a
    `ViewMismatchError` that, for a view made on another version of the dataset (found through
    its latest manifest, read only then), names that version and how to read it."""
    try:
        return check_view_dataset(view, manifest, where)
    except ViewMismatchError as e:
        made_on = version_of(dataset_root, view.dataset, storage_options)
        if made_on is None or made_on == manifest.dataset_version:
            raise
        raise ViewMismatchError(
            f"{where}: view {view.name!r} was made on version {made_on} of this dataset, this "
            f"reader reads version {manifest.dataset_version}: read it with "
            f"Dataset(path, version={made_on}, view={view.name!r}) (or StreamingDataset), or "
            "make the view again on this version (fastpack view)"
        ) from e


def read_view_at(path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None) -> View:
    """The view file at the local path or URL `path`."""
    if not is_url(path):
        return read_view_file(path)
    folder, _, name = os.fspath(path).rpartition("/")
    location = Location(folder, storage_options)
    try:
        data = location.read_bytes(name)
    except DatasetNotFoundError as e:
        raise DatasetNotFoundError(f"{location.url_of(name)}: view file not found") from e
    return view_from_bytes(data, location.url_of(name))


def list_views(
    dataset_root: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> list[str]:
    """The names of the views beside the dataset at `dataset_root`, sorted; [] where the folder
    cannot be listed."""
    try:
        if is_url(dataset_root):
            location = Location(os.fspath(dataset_root), storage_options)
            files = [name for name, _ in location.walk(VIEWS_DIR)]
        else:
            files = [p.name for p in (Path(dataset_root) / VIEWS_DIR).iterdir()]
    except (OSError, ValueError, FastpackError):
        return []
    return sorted(
        f.rpartition("/")[2][: -len(VIEW_SUFFIX)] for f in files if f.endswith(VIEW_SUFFIX)
    )
