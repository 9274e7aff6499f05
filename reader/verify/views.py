"""The checks of a view file (formats/SPEC.md sections 8 and 9), shared by `verify_dataset`,
`verify_remote` (views beside the dataset) and `verify_view` (views anywhere): everything a
reader refuses (a version-2 file's CRC-32C of the whole file included), a header written
otherwise than writers write it, a name other than its file's (beside the dataset), and a view
made for another dataset.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastpack.formats import FastpackError, Manifest, ViewMismatchError
from fastpack.formats.manifest import manifest_digest
from fastpack.formats.view import VIEW_SUFFIX, check_view_dataset, check_view_text


def view_problems(
    where: str,
    data: bytes,
    manifest: Manifest,
    name: str | None,
    earlier: Iterable[Manifest] = (),
) -> list[str]:
    """The problems of the view file `where` read as `data`, for the dataset of `manifest`, or
    of one of its `earlier` versions (formats/SPEC.md section 11: a view made on one is read
    with it); `name`: the view's name its file gives it (beside the dataset), or None
    (elsewhere)."""
    try:
        view = check_view_text(data, where)
    except FastpackError as e:
        return [f"{type(e).__name__}: {e}"]
    problems = []
    if name is not None and view.name != name:
        problems.append(
            f"{where}: the view is named {view.name!r}, its file {name + VIEW_SUFFIX!r}"
        )
    made_on = next((m for m in earlier if manifest_digest(m) == view.dataset), manifest)
    try:
        check_view_dataset(view, made_on, where)
    except ViewMismatchError as e:
        problems.append(f"{type(e).__name__}: {e}")
    return problems


def file_view_name(file_name: str) -> str | None:
    """The view name a file beside the dataset gives (`views/<name>.fpview`), or None for a
    file that is no view (a writer's temporary file)."""
    return file_name[: -len(VIEW_SUFFIX)] if file_name.endswith(VIEW_SUFFIX) else None
