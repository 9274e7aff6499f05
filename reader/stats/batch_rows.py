"""How many samples a batch holds, whatever its first value is."""

from __future__ import annotations

from typing import Any


def batch_rows(batch: Any) -> int:
    """The length of a batch's first value: an array's or a tensor's first dimension, a list's
    length, the rows of a `Padded` value; 0 for a value without a length."""
    first = batch[0] if isinstance(batch, tuple | list) else batch
    first = getattr(first, "lengths", first)  # a Padded value: one length per sample
    if first is None:
        return 0
    shape = getattr(first, "shape", None)
    if shape:
        return int(shape[0])
    try:
        return len(first)
    except TypeError:
        return 0
