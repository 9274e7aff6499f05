"""ImageFolder sources under a URL prefix on an object store: `<url>/<class>/**/<image>`.

Read like a local tree (`folder.scan_folder`), in the same order, so that both build the same
dataset: classes are the sorted names of the folders directly under the prefix (objects
directly under it are ignored), then each class's images depth first in name order
(`walk_order` puts the store's listing in that order), hidden names (a leading `.`) and
files without an image extension left out. Each class is listed page by page
(`Location.walk`), so memory stays flat whatever the number of objects, and sizes come from
the listing: no request per object. An object store has no empty folders: a class folder holds
at least one object, where a local tree may have one with none.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from fastpack.storage import Location

from ...errors import SourceError
from ..scan import PlanRow, SourceScan
from .local import IMAGE_EXTENSIONS
from .walk_order import walk_order


def _is_image(name: str) -> bool:
    """A name under a class folder that a local walk keeps: no hidden part, an image suffix."""
    parts = name.split("/")
    return not any(p.startswith(".") for p in parts[1:]) and (
        os.path.splitext(parts[-1])[1].lower() in IMAGE_EXTENSIONS
    )


def _classes(location: Location, url: str) -> tuple[str, ...]:
    """The class folders, sorted; SourceError naming `url` if there are none."""
    try:
        classes = tuple(sorted(n for n in location.folders() if n and not n.startswith(".")))
        if classes:
            return classes
        empty = not location.has_objects()
    except OSError as e:
        raise SourceError(f"{url}: cannot list: {e}") from e
    if empty:
        raise SourceError(f"{url}: no objects under this prefix")
    raise SourceError(
        f"{url}: no class folders under this prefix (an ImageFolder prefix holds "
        "<class>/<image> objects)"
    )


def _rows(location: Location, url: str, classes: tuple[str, ...]) -> Iterator[PlanRow]:
    def list_from(folder: str, start_after: str) -> Iterator[tuple[str, int]]:
        return location.walk(folder, start_after=start_after)

    try:
        for label, name in enumerate(classes):
            entries = walk_order(list_from, location.has_objects, f"{name}/", keep=_is_image)
            for path, size in entries:
                yield PlanRow(os.fsencode(path), label, size)
    except OSError as e:
        raise SourceError(f"{url}: cannot list: {e}") from e
    except ValueError as e:
        raise SourceError(f"{url}: {e}") from e


def scan_folder_url(url: str) -> SourceScan:
    """The ImageFolder under the prefix `url` (with or without a trailing `/`)."""
    location = Location(url)
    classes = _classes(location, url)
    rows = _rows(location, url, classes)
    return SourceScan(kind="folder", root=Path(), url=location.url, rows=rows, classes=classes)
