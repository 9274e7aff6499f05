"""`StreamResume` alone: what a stream resumes from (its own state, or an epoch's progress over
any layout), and the cursor that counts what an iteration hands out."""

from __future__ import annotations

import copy
import pickle

import pytest
from fastpack.reader import LoaderStateError
from fastpack.reader.streaming.elastic import EpochProgress, Segment
from fastpack.reader.streaming.plan import Stream
from fastpack.reader.streaming.resume import Cursor, StreamResume
from fastpack.reader.streaming.stream_state import StreamState, make_state

MAIN = Stream(0, 1, 0, 1)
WORKER = Stream(1, 2, 1, 3)
NONE = EpochProgress(epoch=2, segments=(), resident_budget=None)


def saved(stream: Stream, position: int, epoch: int = 2, seed: int = 7) -> StreamState:
    return StreamState(epoch=epoch, position=position, stream=stream, seed=seed, progress=NONE)


def test_an_iteration_starts_at_the_top_without_a_resume() -> None:
    resume = StreamResume("ds")
    assert resume.begin(WORKER, 2) == Cursor(WORKER, 0, None)
    assert resume.state(epoch=2, seed=7, stream=MAIN) == saved(WORKER, 0)


def test_a_stream_resumes_after_what_it_handed_out() -> None:
    resume = StreamResume("ds")
    resume.load(saved(WORKER, 40))
    assert resume.state(epoch=2, seed=7, stream=MAIN) == saved(WORKER, 40)  # pending
    cursor = resume.begin(WORKER, 2)
    assert cursor == Cursor(WORKER, 40, None)
    cursor.position += 5  # the iteration hands out five samples
    assert resume.state(epoch=2, seed=7, stream=MAIN) == saved(WORKER, 45)
    assert resume.begin(WORKER, 2).position == 0  # a resume is taken once


def test_another_stream_may_not_take_a_stream_s_state() -> None:
    resume = StreamResume("ds")
    resume.load(saved(WORKER, 40))
    with pytest.raises(
        ValueError,
        match=r"^ds: state saved by rank 1/2, worker 1/3, resumed by rank 0/1, worker 0/1: resume "
        r"with the same world size and worker count$",
    ):
        resume.begin(MAIN, 2)
    assert resume.begin(MAIN, 2).position == 0


def test_a_state_of_another_seed_is_refused() -> None:
    resume = StreamResume("ds")
    state = make_state(saved(WORKER, 3, seed=8))
    assert resume.read(state, seed=8) == saved(WORKER, 3, seed=8)
    with pytest.raises(
        LoaderStateError,
        match=r"^ds: StreamingDataset state saved with seed 8, this dataset has seed 7$",
    ):
        resume.read(state, seed=7)


def test_an_epoch_s_progress_resumes_that_epoch_only() -> None:
    progress = EpochProgress(epoch=3, segments=(Segment(2, 1, 4, 5),), resident_budget=None)
    resume = StreamResume("ds")
    resume.resume(progress)
    assert resume.begin(MAIN, 3) == Cursor(MAIN, 0, progress)
    assert resume.state(epoch=3, seed=7, stream=WORKER).progress == progress
    resume.resume(progress)
    assert resume.begin(MAIN, 4).resumed is None  # another epoch: read whole
    resume.resume(EpochProgress(epoch=3, segments=(), resident_budget=None))
    assert resume.begin(MAIN, 3).resumed is None  # nothing read of it yet
    resume.resume(progress)
    resume.resume(None)
    assert resume.begin(MAIN, 3).resumed is None  # dropped


def test_a_segment_out_of_range_is_refused() -> None:
    bad = EpochProgress(epoch=3, segments=(Segment(0, 1, 4, 5),), resident_budget=None)
    with pytest.raises(ValueError, match=r"segment \[0, 1, 4, 5\]: expected \[world >= 1"):
        StreamResume("ds").resume(bad)


def test_a_copy_carries_the_numbers_only() -> None:
    resume = StreamResume("ds")
    resume.load(saved(WORKER, 40))
    cursor = resume.begin(WORKER, 2)
    copied, pickled = copy.copy(resume), pickle.loads(pickle.dumps(resume))
    cursor.position += 3  # the original iteration goes on
    assert resume.state(epoch=2, seed=7, stream=MAIN).position == 43
    assert copied.state(epoch=2, seed=7, stream=MAIN).position == 40
    assert pickled.state(epoch=2, seed=7, stream=MAIN).position == 40
    copied.resume(None)
    copied.load(saved(MAIN, 9))
    assert resume.state(epoch=2, seed=7, stream=MAIN).position == 43  # its own pending resume
