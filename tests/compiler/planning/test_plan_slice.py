"""A shard's `PlanSlice` answers what a shard job asks exactly as the whole plan does."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastpack.compiler.planning import Plan, make_plan, slice_shard


@pytest.mark.parametrize("shuffle_seed", [None, 7])
def test_a_slice_answers_as_the_plan_does(
    make_image_folder: Callable[..., Path], tmp_path: Path, shuffle_seed: int | None
) -> None:
    source = make_image_folder(classes=3, per_class=7)
    directory = tmp_path / "plan"
    directory.mkdir()
    meta = make_plan(source, "folder", directory, shard_size=20_000, shuffle_seed=shuffle_seed)
    plan = Plan(directory)
    assert meta.num_shards > 2
    for shard in range(meta.num_shards):
        part = pickle.loads(pickle.dumps(slice_shard(plan, shard)))  # as a task carries it
        start, stop = meta.shard_range(shard)
        rows = plan.inputs(start, stop)
        assert np.array_equal(part.inputs(start, stop), rows)
        for name in ("label", "size"):
            assert np.array_equal(part.column(name, rows), plan.column(name, rows))
        assert part.sources(rows) == plan.sources(rows)
        assert part.fields(rows) == plan.fields(rows)
        backwards = rows[::-1].copy()
        assert part.sources(backwards) == plan.sources(backwards)
    with pytest.raises(ValueError, match="does not hold"):
        part.sources(np.array([int(plan.inputs(0, 1)[0])], dtype=np.int64))
    with pytest.raises(ValueError, match="asked for"):
        part.inputs(0, 1)
