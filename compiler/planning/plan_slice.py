"""The plan rows of one shard, carried by a task to a machine that cannot see the plan.

A `PlanSlice` answers the questions a shard job asks of a `Plan` (`PlanRows`), for that shard's
rows only: a few hundred kilobytes per shard, sent with the task, so that cluster workers need
neither the plan's directory nor a copy of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .plan_store import Plan, PlanMeta

Column = npt.NDArray[Any]
_COLUMNS = ("label", "size", "container", "offset")


class PlanRows(Protocol):
    """What a shard job reads of a plan (`Plan`, or a `PlanSlice` of it)."""

    @property
    def meta(self) -> PlanMeta: ...

    def inputs(self, start: int, stop: int) -> npt.NDArray[np.int64]: ...

    def column(self, name: str, rows: npt.NDArray[np.int64]) -> Column: ...

    def sources(self, rows: npt.NDArray[np.int64]) -> list[bytes]: ...

    def fields(self, rows: npt.NDArray[np.int64]) -> list[bytes]: ...


def _pack(strings: list[bytes]) -> tuple[Column, Column]:
    offsets = np.zeros(len(strings) + 1, dtype="<u8")
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    return np.frombuffer(b"".join(strings), dtype=np.uint8), offsets


def _unpack(blob: Column, offsets: Column, positions: npt.NDArray[np.intp]) -> list[bytes]:
    starts, ends = offsets[positions].tolist(), offsets[positions + 1].tolist()
    return [blob[a:b].tobytes() for a, b in zip(starts, ends, strict=True)]


@dataclass(frozen=True)
class PlanSlice:
    """The rows of plan positions `[start, stop)`: input row numbers, columns, and strings as
    blobs with offsets, in position order (flat arrays: cheap to pickle and to hold)."""

    meta: PlanMeta
    start: int
    stop: int
    rows: npt.NDArray[np.int64]
    columns: dict[str, Column]
    source_blob: Column
    source_offsets: Column
    field_blob: Column
    field_offsets: Column

    def inputs(self, start: int, stop: int) -> npt.NDArray[np.int64]:
        if (start, stop) != (self.start, self.stop):
            raise ValueError(f"plan slice [{self.start}, {self.stop}) asked for [{start}, {stop})")
        return self.rows

    def _positions(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        order = np.argsort(self.rows, kind="stable")
        found = order[np.searchsorted(self.rows, rows, sorter=order)]
        if not np.array_equal(self.rows[found], rows):
            raise ValueError("plan slice asked for input rows it does not hold")
        return found

    def column(self, name: str, rows: npt.NDArray[np.int64]) -> Column:
        return self.columns[name][self._positions(rows)]

    def sources(self, rows: npt.NDArray[np.int64]) -> list[bytes]:
        return _unpack(self.source_blob, self.source_offsets, self._positions(rows))

    def fields(self, rows: npt.NDArray[np.int64]) -> list[bytes]:
        return _unpack(self.field_blob, self.field_offsets, self._positions(rows))


def slice_shard(plan: Plan, shard: int) -> PlanSlice:
    """Shard `shard`'s rows of `plan`."""
    meta = plan.meta
    start, stop = meta.shard_range(shard)
    rows = plan.inputs(start, stop)
    names = _COLUMNS if meta.containers else _COLUMNS[:2]
    columns = {name: plan.column(name, rows) for name in names}
    sources = _pack(plan.sources(rows))
    fields = _pack(plan.fields(rows))
    return PlanSlice(meta, start, stop, rows, columns, *sources, *fields)
