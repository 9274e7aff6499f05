"""Labels of a batch: from the `cls` (or another class field's) members of tars, ASCII decimal
bytes zero-padded to one width; from record shards, `image/class/label`'s int64 values."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from fastpack.formats import ShardFormatError

from .options import LABEL_FIELD

_ZERO, _NINE, _MINUS = ord("0"), ord("9"), ord("-")
MAX_DIGITS = 18  # any 18-digit decimal fits an int64
_BATCH_NDIM = 2  # a batch of rows: (batch, width) bytes, or (batch, 1) record labels


def parse_labels(
    padded: npt.NDArray[np.uint8], source: str, field: str = LABEL_FIELD
) -> npt.NDArray[np.int64]:
    """Parse a (batch, width) array of `field` members' bytes, each row padded with zero bytes
    on the right.

    Every row must be `-?[0-9]+` (formats/SPEC.md section 4); `source` names the dataset in the
    error raised for a row that is not.
    """
    if padded.ndim != _BATCH_NDIM:
        raise ValueError(
            f"expected a (batch, width) array of {field} bytes, got shape {padded.shape}"
        )
    rows = padded.astype(np.int64)
    used = rows != 0
    lengths = used.sum(axis=1)
    negative = rows[:, 0] == _MINUS if rows.shape[1] else np.zeros(len(rows), bool)
    digit = (rows >= _ZERO) & (rows <= _NINE)
    columns = np.arange(rows.shape[1])
    body = columns[None, :] >= negative[:, None]  # positions after an optional leading '-'
    good = (
        (used == (columns[None, :] < lengths[:, None])).all(axis=1)  # zeros only at the end
        & (digit | ~used | ~body).all(axis=1)
        & (lengths - negative > 0)
        & (lengths - negative <= MAX_DIGITS)
    )
    if not good.all():
        bad = int(np.flatnonzero(~good)[0])
        found = bytes(padded[bad][: lengths[bad]].tobytes())
        raise ShardFormatError(
            f"{source}: a .{field} member holds {found!r}, expected an ASCII decimal label "
            f"of at most {MAX_DIGITS} digits (formats/SPEC.md section 4)"
        )
    values = np.zeros(len(rows), np.int64)
    for j in columns:
        take = digit[:, j] & body[:, j]
        values = np.where(take, values * 10 + (rows[:, j] - _ZERO), values)
    return np.where(negative, -values, values)


def record_labels(labels: npt.NDArray[np.int64], source: str) -> npt.NDArray[np.int64]:
    """The labels of a batch read from record shards: int64 (batch, 1), each sample's one
    `image/class/label` value (formats/SPEC.md section 4.2), as a new (batch,) array. `source`
    names the dataset in the error raised for a batch with a record that lacks its label."""
    if labels.ndim != _BATCH_NDIM or labels.shape[1:] != (1,) or labels.dtype != np.int64:
        raise ShardFormatError(
            f"{source}: a batch of labels of shape {tuple(labels.shape)} ({labels.dtype}), "
            "expected one int64 image/class/label per record (formats/SPEC.md section 4.2)"
        )
    values: npt.NDArray[np.int64] = labels[:, 0].copy()
    return values
