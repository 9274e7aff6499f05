"""Elastic resume of `make_loader` over a StreamingDataset: a state saved at a batch boundary by
W ranks of K workers in batches of B resumes with other W', K', B', and the epoch's samples are
all read once, but for the rank padding; refused states; the per-stream state under torchdata's
StatefulDataLoader; the piece algebra of `elastic` as a property."""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.formats import MANIFEST_NAME, View, read_manifest, write_view_file
from fastpack.formats.manifest import manifest_digest
from fastpack.formats.view import view_file_name
from fastpack.reader import CenterCrop, Dataset, StreamingDataset, make_loader
from fastpack.reader.streaming.elastic import (
    EpochProgress,
    Piece,
    Segment,
    handed_out,
    resumed_streams,
)
from fastpack.reader.streaming.plan import Stream, rank_span, split_span
from fastpack.reader.streaming.sources import FetchOptions
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import jpeg_bytes
from tests.publish import publish_dataset
from tests.s3_server import S3Server

N = 157  # samples, one class each: a batch's labels name its samples
TIMEOUT = 60  # seconds a worker may take per batch
Layout = tuple[int, int, int]  # world size, workers, batch size
MATRIX: list[Layout] = list(itertools.product((1, 2, 4), (0, 1, 3), (7, 64)))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`N` samples of distinct classes (label = sample), in shards of 3 to 11 samples."""
    root = tmp_path_factory.mktemp("elastic")
    source = root / "src"
    rng = np.random.default_rng(0)
    for label in range(N):
        folder = source / f"c{label:04d}"
        folder.mkdir(parents=True)
        height, width = (int(v) for v in rng.integers(12, 40, 2))
        (folder / "a.jpg").write_bytes(jpeg_bytes(height, width, seed=label))
    build(source, root / "ds", BuildOptions(workers=1, shard_size=5000, progress=False))
    return root / "ds"


def _loader(path: Path | str, layout: Layout, rank: int, **options: Any) -> Any:
    world, workers, batch_size = layout
    dataset = StreamingDataset(
        path,
        transform=CenterCrop(8),
        seed=options.pop("seed", 3),
        shuffle_window=2,
        rank=rank,
        world_size=world,
        **options,
    )
    with warnings.catch_warnings():  # more workers than this machine's cores
        warnings.simplefilter("ignore", UserWarning)
        return make_loader(
            dataset,
            batch_size=batch_size,
            num_workers=workers,
            persistent_workers=False,
            timeout=TIMEOUT if workers else 0,
        )


def _labels(batches: Iterator[Any], count: int | None = None) -> list[int]:
    return [v for _, labels in itertools.islice(batches, count) for v in labels.tolist()]


def _run(
    path: Path | str,
    layout: Layout,
    state: dict[str, Any] | None,
    stop: int | None,
    epoch: int = 1,
    **options: Any,
) -> tuple[list[int], dict[str, Any], int]:
    """Every rank of `layout` resumes `state` (None: from the epoch's start) and reads `stop`
    batches (None: to the end); the labels read, rank 0's state, and its batches left."""
    seen: list[int] = []
    saved: dict[str, Any] = {}
    batches = 0
    for rank in range(layout[0]):
        loader = _loader(path, layout, rank, **options)
        loader.dataset.set_epoch(epoch)
        if state is not None:
            loader.load_state_dict(state)
        if rank == 0:
            batches = len(loader)
        iterator = iter(loader)
        labels = _labels(iterator, stop)
        if stop is not None:
            assert len(labels) <= stop * layout[2]
        seen += labels
        if rank == 0:
            saved = loader.state_dict()
        del iterator, loader
    return seen, saved, batches


def _padding(total: int, world: int, drop_last: bool) -> int:
    """Samples the rank rule reads twice (negative: leaves out) in a segment of `total`."""
    per = total // world if drop_last else -(-total // world)
    return per * world - total


@pytest.mark.parametrize("case", range(len(MATRIX)))
def test_resume_with_another_layout_reads_every_sample_once(built: Path, case: int) -> None:
    """Each layout of the matrix stops after a random number of batches and resumes with
    another (and a third of them stop again and resume with a third). Each layout reads the
    samples not read before it, and repeats at most its own padding of them; the layout that
    ends the epoch repeats exactly its padding."""
    rng = np.random.default_rng(case)
    layouts = [MATRIX[case], MATRIX[(case * 7 + 5) % len(MATRIX)]]
    if case % 3 == 0:
        layouts.append(MATRIX[(case * 5 + 11) % len(MATRIX)])
    seen: list[int] = []
    state: dict[str, Any] | None = None
    for k, layout in enumerate(layouts):
        last = k == len(layouts) - 1
        batches = len(_loader(built, layout, 0))  # of a whole epoch, or (below) of what is left
        if state is not None:
            probe = _loader(built, layout, 0)
            probe.load_state_dict(state)
            batches = len(probe)
        stop = None if last else int(rng.integers(1, batches)) if batches > 1 else batches
        read, state, counted = _run(built, layout, state, stop)
        assert counted == batches
        unread = N - len(set(seen))
        repeats = len(read) - len(set(read) - set(seen))  # read before, or twice here
        padding = _padding(unread, layout[0], drop_last=False)
        assert repeats == padding if last else repeats <= padding, (k, repeats, padding)
        seen += read
        assert state["epoch"] == 1
        assert len(state["segments"]) == k + 1
        assert state["segments"][-1] == [*layout, batches if last else stop]
    counts = np.bincount(seen, minlength=N)
    assert counts.min() == 1, f"never read: {np.flatnonzero(counts == 0).tolist()}"


def test_drop_last_leaves_out_what_the_rank_rule_drops(built: Path) -> None:
    first, second = (4, 1, 7), (3, 0, 5)
    head, state, _ = _run(built, first, None, 2, drop_last=True)
    rest, _, _ = _run(built, second, state, None, drop_last=True)
    counts = np.bincount(head + rest, minlength=N)
    assert counts.max() == 1
    left = N + _padding(N, 4, drop_last=True) - len(head)
    assert N - counts.sum() == -_padding(N, 4, True) - _padding(left, 3, True)


def test_the_same_loader_resumes_with_its_persistent_workers_restarted(built: Path) -> None:
    dataset = StreamingDataset(built, transform=CenterCrop(8), seed=3, shuffle_window=2)
    loader: Any = make_loader(dataset, batch_size=6, num_workers=2, timeout=TIMEOUT)
    full = loader.dataset.num_batches(2)
    head = _labels(iter(loader), 5)
    state = loader.state_dict()
    assert state["segments"] == [[1, 2, 6, 5]]
    assert len(loader) == full
    loader.load_state_dict(state)
    assert len(loader) == full - 5
    rest = _labels(iter(loader))
    assert sorted(head + rest) == list(range(N))
    assert loader.state_dict()["segments"] == [[1, 2, 6, 5], [1, 2, 6, full - 5]]
    dataset.set_epoch(1)  # the next epoch is read whole by the same workers
    assert len(loader) == full
    assert sorted(_labels(iter(loader))) == list(range(N))
    assert loader.state_dict()["segments"] == [[1, 2, 6, full]]


def test_a_state_saved_at_the_end_of_an_epoch_leaves_nothing_of_it(built: Path) -> None:
    loader = _loader(built, (1, 0, 16), 0)
    _labels(iter(loader))
    state = loader.state_dict()
    resumed = _loader(built, (2, 1, 5), 0)
    resumed.load_state_dict(state)
    assert len(resumed) == 0
    assert list(resumed) == []
    resumed.dataset.set_epoch(1)
    assert len(_labels(iter(resumed))) == -(-N // 2)
    fresh = _loader(built, (1, 0, 16), 0).state_dict()
    assert fresh["segments"] == []
    assert fresh["epoch"] == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"seed": 4}, "saved with seed=3, this loader reads seed=4"),
        ({"shuffle": False}, "saved with shuffle=True, this loader reads shuffle=False"),
        ({"drop_last": True}, "saved with drop_last=False"),
    ],
)
def test_resume_with_other_settings_is_refused(
    built: Path, options: dict[str, Any], message: str
) -> None:
    state = _loader(built, (1, 0, 8), 0).state_dict()
    with pytest.raises(ValueError, match=message):
        _loader(built, (1, 0, 8), 0, **options).load_state_dict(state)


def test_resume_over_another_dataset_or_bad_counts_is_refused(built: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    build(built.parent / "src", other, BuildOptions(workers=1, shard_size=9000, progress=False))
    state = _loader(built, (1, 0, 8), 0).state_dict()
    with pytest.raises(ValueError, match=r"saved with dataset='[0-9a-f]{64}'"):
        _loader(other, (1, 0, 8), 0).load_state_dict(state)
    loader = _loader(built, (1, 0, 8), 0)
    with pytest.raises(ValueError, match="not a StreamingLoader state"):
        loader.load_state_dict({"epoch": 0, "position": 3})
    with pytest.raises(ValueError, match=r"segment \[2, 1, 8, 99\]: 99 batches of 8 counted"):
        loader.load_state_dict({**state, "segments": [[2, 1, 8, 99]]})
    refused = r"field 'segments\[0\]\[0\]': expected an integer in \[1, 1048576\] \(world"
    with pytest.raises(ValueError, match=refused):
        loader.load_state_dict({**state, "segments": [[0, 1, 8, 1]]})


def test_resume_through_a_bounded_cache_of_an_s3_dataset(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    """Resident shards fix the first layout's shard order: the state carries its budget."""
    url = f"s3://{s3_bucket}/ds"
    publish_dataset(built, url, s3_server.storage_options)
    shards = StreamingDataset(built).manifest.shards
    largest, total = max(s.bytes for s in shards), sum(s.bytes for s in shards)
    options: dict[str, Any] = {
        "cache_dir": tmp_path / "cache",
        "cache_limit": 4 * 3 * largest + total // 3,
        "prefetch": 1,
        "storage_options": s3_server.storage_options,
        "fetch": FetchOptions(),
    }
    head, state, _ = _run(url, (2, 1, 8), None, 3, **options)
    assert state["resident_budget"] is not None
    rest, _, _ = _run(url, (1, 0, 16), state, None, **options)
    counts = np.bincount(head + rest, minlength=N)
    assert counts.min() == 1
    assert (
        counts.max() == 1
    )  # resumed on one rank: no padding, and the first layout's copy left out


def test_stateful_dataloader_resumes_each_worker_where_it_was(built: Path) -> None:
    """torchdata's StatefulDataLoader saves and restores `StreamingDataset.state_dict()` per
    worker: with the same layout every sample is read once."""
    from torchdata.stateful_dataloader import StatefulDataLoader  # noqa: PLC0415 -- optional: torchdata

    def loader(workers: int) -> StatefulDataLoader:
        dataset = StreamingDataset(built, seed=2, transform=CenterCrop(8), shuffle_window=2)
        dataset.set_epoch(1)
        return StatefulDataLoader(dataset, batch_size=10, num_workers=workers)

    for workers in (0, 2):
        first = loader(workers)
        head = _labels(iter(first), 6)
        state = first.state_dict()
        resumed = loader(workers)
        resumed.load_state_dict(state)
        rest = _labels(iter(resumed))
        assert sorted(head + rest) == list(range(N)), workers


def test_a_resumed_stream_saves_and_restores_its_own_state(built: Path) -> None:
    """The per-stream state of a stream reading a resumed epoch carries the segments."""
    progress = EpochProgress(epoch=1, segments=(Segment(2, 3, 7, 4),), resident_budget=None)

    def dataset() -> StreamingDataset:
        made = StreamingDataset(built, seed=3, shuffle_window=2, transform=CenterCrop(8))
        made.set_epoch(1)
        made.resume(progress)
        return made

    whole = [int(label) for _, label in dataset()]
    # 2 ranks of 3 workers handed out 4 batches of 7 each; the copy that pads the first layout
    # is not read again: its twin, the epoch's first sample, was read in rank 0's first window
    assert len(whole) == N - 4 * 7 * 2
    reading = dataset()
    iterator = iter(reading)
    head = [int(next(iterator)[1]) for _ in range(20)]
    state = reading.state_dict()
    assert state["segments"] == [[2, 3, 7, 4]]
    assert state["position"] == 20
    again = StreamingDataset(built, seed=3, shuffle_window=2, transform=CenterCrop(8))
    again.load_state_dict(state)
    assert head + [int(label) for _, label in again] == whole


# -- views ---------------------------------------------------------------------------------------


def _write_view(built: Path, name: str, rows: np.ndarray, balance: str | None = None) -> View:
    manifest = read_manifest(built / MANIFEST_NAME)
    view = View(
        name=name,
        dataset=manifest_digest(manifest),
        num_samples=manifest.num_samples,
        rows=rows,
        balance=balance,
    )
    write_view_file(built / view_file_name(name), view)
    return view


def _view_rows(built: Path) -> np.ndarray:
    """Every other shard's samples, less one sample in three."""
    shard = Dataset(built)._opened().index.shard
    rows = np.flatnonzero(np.asarray(shard) % 2 == 0)
    kept: np.ndarray = rows[rows % 3 != 1].astype(np.int64)
    return kept


def test_a_view_reads_its_rows_and_only_their_shards(built: Path) -> None:
    rows = _view_rows(built)
    _write_view(built, "half", rows)
    labels = Dataset(built).labels
    wanted = sorted(int(v) for v in labels[rows])
    seen = []
    for rank in range(2):
        loader = _loader(built, (2, 2, 5), rank, view="half")
        dataset = loader.dataset
        assert len(dataset) == -(-len(rows) // 2)
        assert len(loader) == dataset.num_batches(2)
        in_view = set(np.unique(Dataset(built)._opened().index.shard[rows]).tolist())
        for worker in range(2):
            plan = dataset.plan(Stream(rank, 2, worker, 2))
            assert {c.shard for window in plan.windows for c in window} <= in_view
        seen += _labels(iter(loader))
    assert sorted(set(seen)) == wanted
    assert len(seen) - len(wanted) == _padding(len(rows), 2, False)


def test_a_view_resumes_with_another_layout_and_names_itself(built: Path) -> None:
    rows = _view_rows(built)
    view = _write_view(built, "half", rows)
    wanted = sorted(int(v) for v in Dataset(built).labels[rows])
    head, state, _ = _run(built, (2, 1, 4), None, 3, view="half")
    assert state["view"] == {"name": "half", "digest": view.digest()}
    rest, _, _ = _run(built, (3, 0, 6), state, None, view=view)
    counts = Counter(head + rest)
    assert sorted(counts) == wanted
    left = len(rows) + _padding(len(rows), 2, False) - len(head)
    assert counts.total() - len(rows) == _padding(len(rows), 2, False) + _padding(left, 3, False)
    with pytest.raises(ValueError, match=r"saved with view=\{'name': 'half'"):
        _loader(built, (1, 0, 4), 0).load_state_dict(state)
    _write_view(built, "other", rows[1:])
    with pytest.raises(ValueError, match="saved with view="):
        _loader(built, (1, 0, 4), 0, view="other").load_state_dict(state)


def test_a_class_balanced_view_is_refused(built: Path) -> None:
    _write_view(built, "fair", _view_rows(built), balance="class")
    refused = r"view 'fair' is balanced by 'class'.*Dataset\(path, view"
    with pytest.raises(ValueError, match=refused):
        StreamingDataset(built, view="fair")


# -- the piece algebra ---------------------------------------------------------------------------


def _positions(pieces: Sequence[Piece], total: int, first: Segment, drop_last: bool) -> list[int]:
    """The epoch positions (mod `total`) that `pieces` of the first layout's streams cover."""
    per_rank, out = first.streams_per_rank, []
    for stream, start, stop in pieces:
        rank, worker = divmod(stream, per_rank)
        span = split_span(*rank_span(total, first.world, rank, drop_last), per_rank, worker)
        out += [(span[0] + p) % total for p in range(start, stop)]
    return out


def _round_robin(streams: list[list[int]], size: int) -> list[tuple[int, list[int]]]:
    """A rank's batches in the order a DataLoader yields them, one per worker in turn (the
    workers whose streams have ended left out), each with its worker."""
    batches = [[s[k : k + size] for k in range(0, len(s), size)] for s in streams]
    rounds = max((len(b) for b in batches), default=0)
    return [(w, b[k]) for k in range(rounds) for w, b in enumerate(batches) if k < len(b)]


layouts = st.tuples(st.integers(1, 5), st.integers(0, 4), st.integers(1, 9))


@settings(max_examples=300, deadline=None)
@given(
    total=st.integers(1, 120),
    plan=st.lists(st.tuples(layouts, st.floats(0, 1)), min_size=1, max_size=4),
    drop_last=st.booleans(),
)
def test_segments_split_the_rest_of_the_epoch_exactly(
    total: int, plan: list[tuple[Layout, float]], drop_last: bool
) -> None:
    """Layouts that each read part of an epoch (the last one the rest of it) read every sample;
    each reads only samples not read before it, but for its own padding, and the last one
    repeats exactly its padding (with `drop_last`: every sample at most once, each segment
    leaving out what its rank rule drops); `handed_out` counts what the DataLoader yielded."""
    reads: Counter[int] = Counter()
    segments: list[Segment] = []
    left, padded = total, 0  # drop_last: samples left to the layouts, samples left out
    for k, ((world, workers, size), fraction) in enumerate(plan):
        streams = resumed_streams(total, segments, world, workers, drop_last)
        first = segments[0] if segments else Segment(world, workers, size, 0)
        per_rank = max(1, workers)
        ranks = [
            [_positions(s, total, first, drop_last) for s in streams[r * per_rank :][:per_rank]]
            for r in range(world)
        ]
        batches = [_round_robin(own, size) for own in ranks]
        assert len({len(b) for b in batches}) == 1  # the ranks step together
        last = k == len(plan) - 1
        count = len(batches[0]) if last else int(fraction * len(batches[0]))
        here: Counter[int] = Counter()
        for own, rank_batches in zip(ranks, batches, strict=True):
            taken = [0] * len(own)
            for worker, batch in rank_batches[:count]:
                here.update(batch)
                taken[worker] += len(batch)
            assert handed_out([len(s) for s in own], size, count) == taken
        if drop_last:
            padded += _padding(left, world, drop_last)
            left += _padding(left, world, drop_last) - here.total()
        else:
            padding = _padding(total - len(reads), world, drop_last)
            repeats = here.total() - len(set(here) - set(reads))
            assert repeats == padding if last else repeats <= padding
        reads.update(here)
        segments.append(Segment(world, workers, size, count))
    values = np.array([reads.get(i, 0) for i in range(total)])
    if drop_last:
        assert left == 0
        assert values.max() <= 1
        assert values.sum() - total == padded
    else:
        assert values.min() >= 1
