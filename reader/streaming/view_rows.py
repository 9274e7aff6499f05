"""A view read by a `StreamingDataset`: opened and checked, and its rows counted per shard, so
that an epoch is the view's rows grouped by shard (a plan's positions are the view's, mapped to
dataset rows through `View.rows`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import Manifest, View

from ..order.identity import dataset_identity
from ..views import ViewSpec, open_view

IntArray = npt.NDArray[np.int64]


def streaming_view(
    root: str, manifest: Manifest, view: ViewSpec, storage_options: Mapping[str, Any] | None
) -> View:
    """The view `view` of the dataset at `root` (`open_view`); a class-balanced view is refused:
    drawing equal shares of each class needs random access."""
    opened = open_view(root, manifest, view, storage_options=storage_options)
    if opened.balance is not None:
        raise ValueError(
            f"{root}: view {opened.name!r} is balanced by {opened.balance!r}; a StreamingDataset "
            "reads shard after shard and cannot draw balanced samples: read it with "
            "Dataset(path, view=...)"
        )
    return opened


def shard_counts(counts: IntArray, rows: IntArray) -> IntArray:
    """The number of `rows` in each shard, whose samples are `counts` (the index numbers the
    samples of shard `s` after those of the shards before it)."""
    shards = np.searchsorted(np.cumsum(counts), rows, side="right")
    return np.bincount(shards, minlength=len(counts)).astype(np.int64)


def order_identity(manifest: Manifest, view: View | None) -> dict[str, Any]:
    """What a dataset's samples are, as a loader's saved state names them: the digest of its
    `manifest`, the dataset version it describes and the `view` read (its name and digest;
    None: the whole dataset): `order.identity`."""
    return dataset_identity(manifest, view)
