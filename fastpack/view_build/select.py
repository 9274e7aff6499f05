"""The samples of each view: the options applied to the index's columns (labels, source paths,
sample numbers), never to the shards."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fastpack.formats import Index, Manifest, View
from fastpack.formats.manifest import manifest_digest

from .draws import in_fraction, split_parts
from .options import ViewOptions, ViewOptionsError
from .source_glob import glob_mask

SHOWN_CLASSES = 20

Rows = npt.NDArray[np.int64]


def select_views(
    manifest: Manifest, index: Index, name: str | None, options: ViewOptions, where: str
) -> list[View]:
    """The views of the dataset (`manifest`, `index`) that `options` select, named after `name`
    (`ViewOptions.names`); `where` names the dataset in errors. An empty view is an error."""
    names = options.names(name)
    if options.balance and manifest.schema.label_field is None:
        raise ViewOptionsError(f"{where}: --balance draws classes equally, but no field is a class")
    rows = _filtered(manifest, index, options, where)
    groups: list[tuple[str | None, Rows]] = [(None, rows)]
    if options.split is not None:
        parts = split_parts(options.seed, rows, [f for _, f in options.split])
        groups = [(part, rows[parts == j]) for j, (part, _) in enumerate(options.split)]
    digest = manifest_digest(manifest)
    views = []
    for view_name, (part, selected) in zip(names, groups, strict=True):
        if not selected.size:
            in_part = f" in split part {part!r}" if part is not None else ""
            raise ViewOptionsError(
                f"{where}: no sample{in_part} fits {options.describe()} (of "
                f"{manifest.num_samples} samples); the view {view_name!r} would be empty"
            )
        views.append(
            View(
                name=view_name,
                dataset=digest,
                num_samples=manifest.num_samples,
                rows=selected,
                definition=options.definition(part),
                balance="class" if options.balance else None,
            )
        )
    return views


def _filtered(manifest: Manifest, index: Index, options: ViewOptions, where: str) -> Rows:
    """The samples that every option but the split selects, ascending."""
    if options.classes is not None:
        labels = class_labels(manifest, options.classes, where)
        rows: Rows = np.flatnonzero(np.isin(index.label, labels))
    else:
        rows = np.arange(index.num_samples, dtype=np.int64)
    if options.where is not None:
        blob, offsets = index.string_table("source")
        rows = rows[glob_mask(blob, offsets, options.where)[rows]]
    if options.fraction is not None:
        rows = rows[in_fraction(options.seed, rows, options.fraction)]
    return rows


def class_labels(manifest: Manifest, classes: tuple[str, ...], where: str) -> list[int]:
    """The labels of the class names `classes` (decimal labels where the dataset names none)."""
    if manifest.schema.label_field is None:
        raise ViewOptionsError(f"{where}: --classes selects by label, but no field is a class")
    known = manifest.classes
    if not known:
        bad = [c for c in classes if not c.lstrip("-").isdigit()]
        if bad:
            raise ViewOptionsError(
                f"{where}: unknown class {bad[0]!r}: the dataset names no classes, its labels "
                "are bare integers (give those)"
            )
        return [int(c) for c in classes]
    unknown = [c for c in classes if c not in known]
    if unknown:
        listed = ", ".join(known[:SHOWN_CLASSES])
        more = f", ... ({len(known) - SHOWN_CLASSES} more)" if len(known) > SHOWN_CLASSES else ""
        raise ViewOptionsError(
            f"{where}: unknown class {', '.join(map(repr, unknown))}; the dataset's classes "
            f"are: {listed}{more}"
        )
    position = {name: k for k, name in enumerate(known)}
    return [position[c] for c in classes]
