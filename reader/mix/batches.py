"""A mix's batch from its sources' parts: the shared-memory columns decoded in place, the others
joined, class ids moved into the unified class table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import field_type

from ..fields import Column, Padded
from ..image.batch import Allocate
from ..map_style.dataset import Dataset
from .classes import remap


@dataclass(frozen=True)
class MixSources:
    """What a mix's samples and batches are made from: its datasets, the columns they share,
    and each one's map of class ids into the unified table (`classes.unify_classes`)."""

    datasets: Sequence[Dataset]
    columns: Sequence[Column]
    class_maps: Sequence[npt.NDArray[np.int64]]


def merge_batches(
    mix: MixSources,
    parts: Sequence[tuple[int, list[int]]],
    epoch: int,
    allocate: Allocate | None = None,
) -> tuple[Any, ...]:
    """One batch from `parts`, `(source, its sample ids)` in turn: each source decodes its
    samples into its rows of the batch's `slot` arrays (allocated here, once, by `allocate`,
    the mix's allocator), the other columns are joined in the same order."""
    columns = mix.columns
    total = sum(len(ids) for _, ids in parts)
    allocate = allocate or _new_array
    slots = {k: allocate((total, *c.shape)) for k, c in enumerate(columns) if c.kind == "slot"}
    gathered: list[list[Any]] = [[] for _ in columns]
    first = 0
    for source, ids in parts:
        dataset = mix.datasets[source]
        dataset.batch_allocator = _rows_of(slots, first, len(ids))
        try:
            values = dataset.__getitems__(_Part(ids, epoch))
        finally:
            dataset.batch_allocator = None
        for k, value in enumerate(values):
            gathered[k].append(_in_union(mix, source, columns[k], value))
        first += len(ids)
    return tuple(
        slots[k] if k in slots else _join(column, gathered[k], mix.datasets[0].pad_value)
        for k, column in enumerate(columns)
    )


class _Part(list[int]):
    """A source's sample ids in a mix batch, with the batch's epoch (as `EpochBatch` carries)."""

    def __init__(self, ids: Sequence[int], epoch: int) -> None:
        super().__init__(ids)
        self.epoch = epoch


def remap_sample(mix: MixSources, source: int, sample: tuple[Any, ...]) -> tuple[Any, ...]:
    """One sample of `source` with its class ids in the unified table."""
    return tuple(
        _remap_value(mix, source, c, v) if field_type(c.spec.type).classes else v
        for c, v in zip(mix.columns, sample, strict=True)
    )


def _rows_of(slots: dict[int, npt.NDArray[np.uint8]], first: int, count: int) -> Allocate:
    """An allocator handing out rows `[first, first + count)` of each slot array in turn."""
    arrays = iter(list(slots.values()))

    def allocate(shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
        array = next(arrays)
        if shape != (count, *array.shape[1:]):
            raise ValueError(f"a mix part asked for {shape}, its rows are {array.shape}")
        return array[first : first + count]

    return allocate


def _in_union(mix: MixSources, source: int, column: Column, value: Any) -> Any:
    if not field_type(column.spec.type).classes:
        return value
    if column.kind == "list":
        return [None if v is None else _remap_value(mix, source, column, v) for v in value]
    if isinstance(value, Padded):
        return Padded(_remap_value(mix, source, column, value.values), value.lengths)
    return _remap_value(mix, source, column, value)


def _remap_value(mix: MixSources, source: int, column: Column, value: Any) -> Any:
    where = f"{mix.datasets[source].path} field {column.name!r}"
    if np.ndim(value) == 0:
        return np.int64(remap(np.array([value], np.int64), mix.class_maps[source], where)[0])
    return remap(np.asarray(value, np.int64), mix.class_maps[source], where)


def _join(column: Column, values: list[Any], pad_value: float) -> Any:
    if column.kind == "list":
        return [v for part in values for v in part]
    if column.kind == "padded":
        return _join_padded(values, pad_value)
    return np.concatenate(values)


def _join_padded(parts: list[Padded], pad_value: float) -> Padded:
    longest = max(p.values.shape[1] for p in parts)
    trailing = parts[0].values.shape[2:]
    total = sum(len(p.lengths) for p in parts)
    values = np.full((total, longest, *trailing), pad_value, parts[0].values.dtype)
    first = 0
    for p in parts:
        values[first : first + len(p.lengths), : p.values.shape[1]] = p.values
        first += len(p.lengths)
    return Padded(values, np.concatenate([p.lengths for p in parts]))


def _new_array(shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
    return np.empty(shape, np.uint8)
