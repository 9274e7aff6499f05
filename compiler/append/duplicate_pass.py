"""Duplicates among an append's new inputs, found before its shard jobs (which run in parallel
and see one shard each): an input whose bytes equal those of an input earlier in the plan is
left out, as one the dataset holds is.

Only inputs whose size another new input shares can have such a twin, so only those are read
here (the plan knows every input's size). Each is first looked up among the dataset's stored
images (`StoredImages`); else its content key is compared with those of the earlier inputs
read, and a match is confirmed by reading the earlier input again and comparing the bytes.
The list (`duplicates.FOUND`) is written once, before the jobs, and a resumed append reads it:
the same inputs are left out however often the append is interrupted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fastpack.formats.layout import sample_key

from ..images.policy import Reject
from ..jobs.duplicates import FOUND, StoredImages, content_key, save_found
from ..jobs.inputs import InputReader
from ..planning import Plan
from ..sources.scan import NO_CONTAINER


class _Rows:
    """The plan rows of the positions read, and their bytes through one reader."""

    def __init__(self, plan: Plan, positions: list[int], reader: InputReader) -> None:
        rows = plan.inputs(0, plan.meta.num_inputs)[positions]
        self._sources = dict(zip(positions, plan.sources(rows), strict=True))
        self._sizes = dict(zip(positions, plan.column("size", rows).tolist(), strict=True))
        members = bool(plan.meta.containers)
        containers = plan.column("container", rows).tolist() if members else []
        offsets = plan.column("offset", rows).tolist() if members else []
        self._containers = dict(zip(positions, containers, strict=True)) if members else {}
        self._offsets = dict(zip(positions, offsets, strict=True)) if members else {}
        self._reader = reader

    def read(self, position: int) -> bytes | None:
        """The input's bytes; None where it cannot be read (the job rejects it)."""
        data = self._reader.read(
            self._sources[position],
            self._containers.get(position, NO_CONTAINER),
            self._offsets.get(position, 0),
            self._sizes[position],
        )
        return None if isinstance(data, Reject) or not data else data


def shared_sizes(plan: Plan) -> list[int]:
    """The plan positions of the non-empty inputs whose size another input shares."""
    rows = plan.inputs(0, plan.meta.num_inputs)
    sizes = plan.column("size", rows)
    _, inverse, counts = np.unique(sizes, return_inverse=True, return_counts=True)
    shared = (counts[inverse] > 1) & (sizes > 0)
    return [int(p) for p in np.flatnonzero(shared)]


def find_duplicates(plan: Plan, images: StoredImages) -> list[tuple[int, str]]:
    """`(plan position, key of the sample it duplicates)` of every input, among those that
    share a size, whose bytes the dataset stores or an earlier input has (then the key that
    input takes), in plan order."""
    meta = plan.meta
    positions = shared_sizes(plan)
    found: list[tuple[int, str]] = []
    firsts: dict[int, list[int]] = {}  # content key -> positions of distinct contents
    with InputReader(meta) as reader:
        rows = _Rows(plan, positions, reader)
        for position in positions:
            data = rows.read(position)
            if data is None:
                continue
            key = images.find(data)
            if key is not None:
                found.append((position, key))
                continue
            earlier = firsts.setdefault(content_key(data), [])
            twin = next((q for q in earlier if rows.read(q) == data), None)
            if twin is None:
                earlier.append(position)
            else:
                found.append((position, sample_key(meta.key_base + twin, meta.key_width)))
    return found


def list_duplicates(plan: Plan, images: StoredImages, build_dir: Path) -> None:
    """`find_duplicates` into `build_dir` (`FOUND`), unless a resumed append listed them."""
    if not (build_dir / FOUND).exists():
        save_found(build_dir, find_duplicates(plan, images))
