"""`build_views`: the views of a dataset, from its index alone."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from fastpack.formats import View

from .dataset import open_dataset
from .options import ViewOptions
from .select import select_views


def build_views(  # noqa: PLR0913 -- public signature
    dataset: str | os.PathLike[str],
    name: str | None = None,
    *,
    classes: Sequence[str] | None = None,
    fraction: float | None = None,
    split: str | Mapping[str, float] | Sequence[tuple[str, float]] | None = None,
    where: str | None = None,
    balance: bool = False,
    seed: int = 0,
    storage_options: Mapping[str, Any] | None = None,
    version: int | None = None,
) -> list[View]:
    """The views of the dataset directory or URL `dataset` (formats/SPEC.md section 8), not yet
    written (`save_views` writes them).

    The samples are those of the classes named in `classes`, whose source path matches the glob
    `where`, in the seeded `fraction` (nested: with the same seed a smaller fraction is a subset
    of a larger one); all that are given. One view `name`, or with `split`
    (`"train:0.9,val:0.1"`) one per part, disjoint, named `<name>-<part>` (`<part>` without
    `name`). `balance` marks them to be drawn class-balanced. The views are made on version
    `version` of a dataset grown by appends (default: the latest): each records that version's
    manifest digest and is read with that version only. Raises `ViewOptionsError` for options
    that select nothing or make an empty view."""
    options = ViewOptions.of(
        classes=classes, fraction=fraction, split=split, where=where, balance=balance, seed=seed
    )
    options.names(name)  # a bad name fails before the index is read
    with open_dataset(dataset, storage_options, version=version) as (manifest, index):
        return select_views(manifest, index, name, options, os.fspath(dataset))
