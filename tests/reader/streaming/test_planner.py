"""`EpochPlans` alone: the plans of a dataset's (or a view's) epochs from its manifest and the
options, with and without resident shards, from the start or from a saved progress."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import Manifest, View, read_manifest
from fastpack.formats.manifest import manifest_digest
from fastpack.reader.streaming.elastic import EpochProgress, Segment
from fastpack.reader.streaming.options import StreamingOptions
from fastpack.reader.streaming.plan import Stream, stream_plan
from fastpack.reader.streaming.planner import EpochPlans

from tests.reader.conftest import Built


@pytest.fixture
def manifest(build_dataset: Callable[..., Built]) -> Manifest:
    built = build_dataset(classes=3, per_class=7, size=24, shard_size=4_000)
    return read_manifest(Path(built.path) / "fastpack.json")


def test_a_plan_is_the_epoch_s_plan_of_the_stream(manifest: Manifest) -> None:
    plans = EpochPlans(manifest, None)
    counts = np.array([s.samples for s in manifest.shards], dtype=np.int64)
    assert plans.counts.tolist() == counts.tolist()
    assert plans.total == 21
    assert plans.rows is None
    options = StreamingOptions(seed=4, shuffle_window=2, drop_last=True)
    stream = Stream(1, 2, 0, 2)
    expected = stream_plan(counts, stream, seed=4, epoch=3, shuffle=True, window=2, drop_last=True)
    assert plans.plan(stream, options, budget=None, epoch=3) == expected
    assert plans.plan(stream, options, budget=None, epoch=4) != expected


def test_the_span_of_a_rank(manifest: Manifest) -> None:
    plans = EpochPlans(manifest, None)
    assert [plans.span(w, drop_last=False) for w in (1, 2, 4)] == [21, 11, 6]
    assert [plans.span(w, drop_last=True) for w in (1, 2, 4)] == [21, 10, 5]


def test_resident_shards_are_kept_for_the_last_layout(manifest: Manifest) -> None:
    plans = EpochPlans(manifest, None)
    options = StreamingOptions(seed=1)
    assert plans.resident(2, None, options) is None
    assert plans.resident(2, 0, options) is None  # no byte left: none resident
    largest = max(s.bytes for s in manifest.shards)
    resident = plans.resident(2, 2 * largest, options)
    assert resident is not None
    assert len(resident) == 2
    assert all(0 < len(r) <= 2 for r in resident)
    assert plans.resident(2, 2 * largest, options) is resident  # kept
    other = plans.resident(2, 2 * largest, StreamingOptions(seed=2))
    assert other is not resident  # another seed: chosen again
    plan = plans.plan(Stream(0, 2, 0, 1), options, budget=2 * largest, epoch=0)
    own = {c.shard for window in plan.windows for c in window}
    assert set(resident[0].tolist()) <= own  # a rank reads its resident shards every epoch


def test_the_batches_of_a_rank(manifest: Manifest) -> None:
    plans = EpochPlans(manifest, None)
    options = StreamingOptions(rank=1, world_size=2)
    assert plans.num_batches(options, 4, 0, None) == 3  # 11 samples
    assert plans.num_batches(options, 4, 2, None) == 4  # workers of 6 and 5 samples: 2 + 2
    progress = EpochProgress(epoch=0, segments=(Segment(2, 0, 4, 2),), resident_budget=None)
    assert plans.num_batches(options, 4, 0, progress) == 1  # 21 - 2 x 8 = 5 left, 3 each


def test_a_resumed_epoch_reads_what_is_left(manifest: Manifest) -> None:
    plans = EpochPlans(manifest, None)
    options = StreamingOptions(seed=3, shuffle_window=2)
    whole = plans.plan(Stream(0, 1, 0, 1), options, budget=None, epoch=5)
    read = [int(i) for part in whole.parts(0, 8) for i in part.samples()]
    progress = EpochProgress(epoch=5, segments=(Segment(1, 0, 4, 2),), resident_budget=None)
    parts = plans.resumed(progress, Stream(0, 1, 0, 1), options, skip=0)
    rest = [int(i) for part in parts for i in part.samples()]
    assert sorted(read + rest) == list(range(21))
    skipped = plans.resumed(progress, Stream(0, 1, 0, 1), options, skip=3)
    assert [int(i) for part in skipped for i in part.samples()] == rest[3:]


def test_a_view_numbers_its_rows(manifest: Manifest) -> None:
    rows = np.array([0, 1, 2, 20], dtype=np.int64)
    view = View(name="few", dataset=manifest_digest(manifest), num_samples=21, rows=rows)
    plans = EpochPlans(manifest, view)
    assert plans.total == 4
    assert plans.rows is view.rows
    plan = plans.plan(Stream(0, 1, 0, 1), StreamingOptions(), budget=None, epoch=0)
    ids = sorted(int(i) for w in range(len(plan.windows)) for i in plan.window_samples(w))
    assert ids == [0, 1, 2, 20]


def test_pickled_it_carries_its_inputs_only(manifest: Manifest) -> None:
    plans = EpochPlans(manifest, None)
    largest = max(s.bytes for s in manifest.shards)
    plans.resident(2, 2 * largest, StreamingOptions())
    copy = pickle.loads(pickle.dumps(plans))
    assert copy.counts.tolist() == plans.counts.tolist()
    assert copy._resident is None  # chosen again where it is needed
    assert len(pickle.dumps(plans)) < len(pickle.dumps(manifest)) + 200  # no array of its own
