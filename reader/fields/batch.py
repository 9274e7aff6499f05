"""Batches of decoded fields: one value per column, by the column's kind (see `layout`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from fastpack.formats import field_type

from .layout import BatchLayout, Column

AnyArray = npt.NDArray[Any]


class Padded(NamedTuple):
    """A batch of variable-length arrays (`pad=True`): `values` `(B, L, ...)`, each sample's
    array in its first `lengths[k]` rows and `pad_value` after them (`L` the longest length);
    `lengths` `(B,)` int64, -1 for a sample that lacks the (optional) member."""

    values: AnyArray
    lengths: npt.NDArray[np.int64]


def _stack(column: Column, values: Sequence[Any], rows: Sequence[int], where: str) -> AnyArray:
    """One array of the same-shape `values` of the samples `rows`."""
    if not values:
        kind = field_type(column.spec.type)
        dtype = np.dtype(column.spec.dtype or kind.batch_dtype or "u1")
        shape = column.shape or tuple(d or 0 for d in column.spec.shape or ())
        return np.empty((0, *shape), dtype)
    first = np.shape(values[0])
    for k, value in enumerate(values):
        if np.shape(value) != first:
            hint = (
                "give the Dataset a transform (RandomResizedCrop, CenterCrop) or read samples "
                "one at a time"
                if field_type(column.spec.type).image
                else "read samples one at a time"
            )
            raise ValueError(
                f"{where}: samples {rows[0]} and {rows[k]} have sizes {first[:2]} and "
                f"{np.shape(value)[:2]} in field {column.name!r}; batching needs one size: {hint}"
            )
    return np.stack(values)


def pad_arrays(
    column: Column,
    values: Sequence[AnyArray | None],
    rows: Sequence[int],
    where: str,
    pad_value: float,
) -> Padded:
    """`values` (None: absent) as one padded array and their lengths."""
    spec = column.spec
    present = [(rows[k], v) for k, v in enumerate(values) if v is not None]
    if spec.shape is not None:
        trailing = tuple(d or 0 for d in spec.shape[1:])
    else:
        trailing = present[0][1].shape[1:] if present else ()
    for row, value in present:
        if value.ndim == 0 or value.shape[1:] != trailing:
            raise ValueError(
                f"{where}: sample {row} field {spec.name!r} has shape {value.shape}; padding "
                f"the batch needs (N, {', '.join(map(str, trailing))})"
            )
    if spec.dtype is not None:
        dtype = np.dtype(spec.dtype)
    elif field_type(spec.type).batch_dtype is not None:
        dtype = np.dtype(field_type(spec.type).batch_dtype)
    else:
        dtype = np.result_type(*(v for _, v in present)) if present else np.dtype(np.float32)
    lengths = np.array([-1 if v is None else len(v) for v in values], np.int64)
    longest = int(lengths.max(initial=0))
    padded = np.full((len(values), longest, *trailing), pad_value, dtype)
    for k, array in enumerate(values):
        if array is not None:
            padded[k, : len(array)] = array
    return Padded(padded, lengths)


def assemble(
    column: Column, values: Sequence[Any], rows: Sequence[int], where: str, pad_value: float
) -> Any:
    """The batch value of `column` from each sample's value (None: an absent member)."""
    if column.kind in ("slot", "stack"):
        return _stack(column, values, rows, where)
    if column.kind == "array":
        kind = field_type(column.spec.type)
        if kind.batch == "scalar":
            return np.array(values, np.dtype(kind.batch_dtype or "<i8"))
        return _stack(column, values, rows, where)
    if column.kind == "padded":
        return pad_arrays(column, values, rows, where, pad_value)
    return list(values)


def collate(
    layout: BatchLayout,
    samples: Sequence[Sequence[Any]],
    rows: Sequence[int],
    where: str,
    pad_value: float = 0,
) -> tuple[Any, ...]:
    """A batch of the decoded `samples` (each a tuple in column order) of dataset indices
    `rows` (for error messages)."""
    per_column = list(zip(*samples, strict=True)) if samples else [()] * len(layout.columns)
    return tuple(
        assemble(column, values, rows, where, pad_value)
        for column, values in zip(layout.columns, per_column, strict=True)
    )


def assemble_columns(
    layout: BatchLayout,
    columns: Sequence[Sequence[Any]],
    rows: Sequence[int],
    where: str,
    pad_value: float = 0,
) -> tuple[Any, ...]:
    """The batch of `SampleDecoder.decode_batch`'s `columns` (a `slot` column's one array as it
    is, every other column assembled) for samples `rows`."""
    return tuple(
        values[0] if column.kind == "slot" else assemble(column, values, rows, where, pad_value)
        for column, values in zip(layout.columns, columns, strict=True)
    )
