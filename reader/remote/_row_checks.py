"""Cheap checks of one shard's index rows as fetched, before they are written to the cache: each
names the index's URL, the shard, the section and the first bad sample."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from fastpack.formats import ABSENT, CorruptIndexError

Rows = Mapping[str, npt.NDArray[np.generic]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ShardRows:
    """One shard's index rows as fetched: `rows` maps a section name to the slice of shard
    `shard` of the index at `url`, whose first sample is `first`."""

    url: str
    shard: int
    first: int
    rows: Rows

    @property
    def where(self) -> str:
        return f"{self.url}: shard {self.shard}"


def check_rows(
    fetched: ShardRows, *, blob_sizes: Mapping[str, int], shard_bytes: int, absent_allowed: bool
) -> None:
    """Every `shard` entry of `fetched` is its shard, `*.offsets` never decrease and stay inside
    their blob, and every member lies inside the shard's `shard_bytes` (but absent members, if
    `absent_allowed`)."""
    where, first, shard, rows = fetched.where, fetched.first, fetched.shard, fetched.rows
    column = rows["shard"]
    wrong = np.flatnonzero(column != shard)
    if wrong.size:
        i = int(wrong[0])
        raise CorruptIndexError(
            f"{where}: section 'shard' puts sample {first + i} in shard {int(column[i])}, the "
            f"manifest's sample counts put samples [{first}, {first + len(column)}) in shard "
            f"{shard}"
        )
    for table, size in blob_sizes.items():
        offsets: npt.NDArray[np.uint64] = rows[f"{table}.offsets"].view(np.uint64)
        _check_offsets(where, first, f"{table}.offsets", offsets, size)
    for name in rows:
        if name.endswith(".offset"):
            stem = name[: -len(".offset")]
            _check_members(fetched, stem, shard_bytes=shard_bytes, absent_allowed=absent_allowed)


def _check_offsets(
    where: str, first: int, name: str, offsets: npt.NDArray[np.uint64], blob_size: int
) -> None:
    down = np.flatnonzero(offsets[1:] < offsets[:-1])
    if down.size:
        i = int(down[0])
        raise CorruptIndexError(
            f"{where}: section {name!r} goes down from {int(offsets[i])} to "
            f"{int(offsets[i + 1])} at sample {first + i}, expected non-decreasing offsets"
        )
    if int(offsets[-1]) > blob_size:
        raise CorruptIndexError(
            f"{where}: section {name!r} reaches byte {int(offsets[-1])}, past the {blob_size} "
            f"bytes of its blob"
        )


def _check_members(
    fetched: ShardRows, stem: str, *, shard_bytes: int, absent_allowed: bool
) -> None:
    offset, size = fetched.rows[f"{stem}.offset"], fetched.rows[f"{stem}.size"]
    limit = np.uint64(shard_bytes)
    outside = (offset > limit) | (size > limit - np.minimum(offset, limit))
    if absent_allowed:
        outside &= offset != np.uint64(ABSENT)
    bad = np.flatnonzero(outside)
    if bad.size:
        i = int(bad[0])
        start, length = int(offset[i]), int(size[i])
        raise CorruptIndexError(
            f"{fetched.where}: sections '{stem}.offset'/'{stem}.size' put sample "
            f"{fetched.first + i} at bytes [{start}, {start + length}), the shard has "
            f"{shard_bytes} bytes"
        )
