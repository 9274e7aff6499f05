"""A StreamingDataset epoch whose ranks are padded (301 samples on 4 ranks: the last rank's span
wraps to the epoch's start, 3 copies), stopped mid-epoch and resumed on another layout: the
resume reads every sample not read before the stop, once, and repeats at most W' - 1 samples,
its own padding, exactly. `elastic` keeps the first layout's copies out of the rest, in the
shuffled windows where the streams read them."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.reader import CenterCrop, StreamingDataset, make_loader
from fastpack.reader.streaming.elastic import (
    Piece,
    Segment,
    in_span_order,
    padding_copies,
    reading_offsets,
    resumed_streams,
)
from fastpack.reader.streaming.plan import Stream, stream_plan

from tests.conftest import jpeg_bytes

N = 301  # samples, one class each: a batch's labels name its samples
FIRST = (4, 0, 8)  # world, workers, batch size: ranks of ceil(301 / 4) = 76, 3 copies


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("padded")
    for label in range(N):
        folder = root / "src" / f"c{label:04d}"
        folder.mkdir(parents=True)
        (folder / "a.jpg").write_bytes(jpeg_bytes(12, 12, seed=label))
    build(root / "src", root / "ds", BuildOptions(workers=1, shard_size=5000, progress=False))
    return root / "ds"


def _loader(path: Path, layout: tuple[int, int, int], rank: int) -> Any:
    world, workers, batch_size = layout
    dataset = StreamingDataset(
        path, transform=CenterCrop(8), seed=3, shuffle_window=2, rank=rank, world_size=world
    )
    dataset.set_epoch(1)
    with warnings.catch_warnings():  # more workers than this machine's cores
        warnings.simplefilter("ignore", UserWarning)
        timeout = 60 if workers else 0
        return make_loader(dataset, batch_size=batch_size, num_workers=workers, timeout=timeout)


def _run(
    path: Path, layout: tuple[int, int, int], state: dict[str, Any] | None, stop: int | None
) -> tuple[list[int], dict[str, Any]]:
    """Every rank of `layout` resumes `state` (None: the epoch's start) and reads `stop`
    batches (None: to the end): the labels read, and rank 0's state."""
    seen: list[int] = []
    saved: dict[str, Any] = {}
    for rank in range(layout[0]):
        loader = _loader(path, layout, rank)
        if state is not None:
            loader.load_state_dict(state)
        batches = itertools.islice(iter(loader), stop)
        seen += [v for _, labels in batches for v in labels.tolist()]
        if rank == 0:
            saved = loader.state_dict()
        del batches, loader
    return seen, saved


def _padding(left: int, world: int) -> int:
    return -(-left // world) * world - left


def test_the_padded_epoch_stopped_on_4_ranks_and_resumed_on_1_repeats_nothing(
    built: Path,
) -> None:
    head, state = _run(built, FIRST, None, 3)
    assert state["segments"] == [[*FIRST, 3]]
    assert len(head) == len(set(head)) == 4 * 3 * 8
    rest, _ = _run(built, (1, 0, 16), state, None)
    counts = np.bincount(head + rest, minlength=N)
    assert np.flatnonzero(counts == 0).tolist() == []  # never read
    assert np.flatnonzero(counts > 1).tolist() == []  # read twice: W' - 1 = 0 allowed
    assert len(rest) == N - len(head)


@pytest.mark.parametrize("layout", [(1, 2, 16), (2, 0, 7), (3, 1, 5), (5, 0, 9)])
def test_a_resume_repeats_exactly_its_own_padding(
    built: Path, layout: tuple[int, int, int]
) -> None:
    head, state = _run(built, FIRST, None, 5)
    rest, _ = _run(built, layout, state, None)
    left = N - len(set(head))
    counts = np.bincount(head + rest, minlength=N)
    assert counts.min() == 1
    assert len(head) == len(set(head))  # nothing read twice before the stop
    assert counts.sum() - N == _padding(left, layout[0])  # at most W' - 1, and exactly that


@pytest.mark.parametrize("world", [1, 2])
def test_a_stop_after_the_last_rank_read_its_padding(built: Path, world: int) -> None:
    """Stopped one batch (of one) before the end of the epoch, the last rank has read at least
    2 of its 3 copies: those repeats happened before the stop, the copy left is not read again,
    and the resume repeats its own padding only."""
    head, state = _run(built, (4, 0, 1), None, 75)  # 76 batches of 1 per rank
    before = len(head) - len(set(head))
    assert 2 <= before <= 3
    rest, _ = _run(built, (world, 0, 4), state, None)
    counts = np.bincount(head + rest, minlength=N)
    assert counts.min() == 1
    left = N - len(set(head))
    assert len(rest) == left + _padding(left, world)
    assert counts.sum() - N == before + _padding(left, world)


# -- the algebra ---------------------------------------------------------------------------------


def test_reading_offsets_find_each_sample_in_its_shuffled_window() -> None:
    counts = np.array([7, 3, 9, 5, 8, 6, 4], np.int64)
    for stream in (Stream(3, 4, 0, 1), Stream(1, 3, 1, 2), Stream(0, 1, 0, 1)):
        plan = stream_plan(counts, stream, seed=5, epoch=2, shuffle=True, window=2, drop_last=False)
        read = np.concatenate([plan.window_samples(w) for w in range(len(plan.windows))])
        span = np.concatenate(
            [np.arange(c.start, c.stop) for window in plan.windows for c in window]
        )
        assert not np.array_equal(read, span)  # the windows are shuffled
        offsets = reading_offsets(plan, range(len(span)))
        assert sorted(offsets) == list(range(len(span)))
        np.testing.assert_array_equal(read[offsets], span)


def test_padding_copies_name_each_repeated_sample_where_each_stream_reads_it() -> None:
    first = Segment(4, 0, 8, 0)  # rank 3 reads positions [228, 304): 301, 302, 303 repeat 0, 1, 2
    copies = [[(0, k), (3, 73 + k)] for k in range(3)]
    assert padding_copies(301, first, False, in_span_order) == copies
    assert padding_copies(300, first, False, in_span_order) == []  # no padding
    assert padding_copies(301, first, True, in_span_order) == []  # drop_last: none either
    # 5 samples on 2 ranks of 2 workers: spans [0, 1) [1, 3) | [3, 4) [4, 6); 5 repeats 0
    lengths = {0: 1, 1: 2, 2: 1, 3: 2}
    assert padding_copies(5, Segment(2, 2, 1, 0), False, _reversed(lengths)) == [[(0, 0), (3, 0)]]


def _reversed(lengths: dict[int, int]) -> Any:
    """A `Locate` of streams that read their spans backwards (stream: span length)."""
    return lambda stream, offsets: [lengths[stream] - 1 - o for o in offsets]


def _samples(pieces: list[Piece], spans: dict[int, tuple[int, int]], total: int) -> list[int]:
    """The samples `pieces` read, when each stream reads its span backwards."""
    out = []
    for stream, start, stop in pieces:
        last = spans[stream][1]
        out += [(last - 1 - o) % total for o in range(start, stop)]
    return out


def test_a_copy_read_before_its_twin_leaves_the_twin_out_of_the_rest() -> None:
    """5 samples on 2 ranks (spans [0, 3) and [3, 6), position 5 repeats sample 0), each
    stream reading its span backwards: after one batch of one, rank 0 read sample 2 and rank 1
    the copy of sample 0, so sample 0's twin, still unread in rank 0's span, is not read again.
    """
    spans = {0: (0, 3), 1: (3, 6)}
    locate = _reversed({0: 3, 1: 3})
    (rest,) = resumed_streams(5, [Segment(2, 0, 1, 1)], 1, 0, False, locate=locate)
    assert rest == [Piece(0, 1, 2), Piece(1, 1, 3)]  # rank 0's offset 2 is sample 0's twin
    assert sorted(_samples(rest, spans, 5)) == [1, 3, 4]
    # nothing read yet: of the two copies of sample 0 the first in stream order stays
    (fresh,) = resumed_streams(5, [Segment(2, 0, 1, 0)], 1, 0, False, locate=locate)
    assert fresh == [Piece(0, 0, 3), Piece(1, 1, 3)]  # rank 1 reads its copy first: left out
    assert sorted(_samples(fresh, spans, 5)) == [0, 1, 2, 3, 4]
