"""EpochReading, what every loader over an EpochBatchSampler shares: the iteration's progress,
its state, and a resume from it with another batch size and other ranks (torch-free)."""

from __future__ import annotations

from typing import Any

import pytest
from fastpack.reader.errors import LoaderStateError
from fastpack.reader.order import EpochBatchSampler, EpochReading


class Source:
    """A dataset as a loader's order sees it: its length, epoch and identity."""

    def __init__(self, n: int, name: str = "a") -> None:
        self.n, self.name, self.epoch = n, name, 0

    def __len__(self) -> int:
        return self.n

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def order_identity(self) -> dict[str, Any]:
        return {"dataset": self.name, "view": None}


def read(reading: EpochReading, batches: int) -> list[int]:
    """The samples of the first `batches` batches of a new iteration, counted as handed out."""
    progress = reading.begin()
    seen: list[int] = []
    for batch in reading.sampler:
        if progress.yielded == batches:
            break
        seen += batch
        progress.yielded += 1
    return seen


def test_a_state_resumes_with_another_batch_size_and_other_ranks() -> None:
    source = Source(40)
    source.set_epoch(3)
    first = EpochReading(EpochBatchSampler(source, 4, seed=9), "ds")
    before = read(first, 3)
    state = first.state_dict()
    assert (state["epoch"], state["position"]) == (3, 12)

    other = Source(40)
    after: list[int] = []
    for rank in (0, 1):
        reading = EpochReading(EpochBatchSampler(other, 7, seed=9, rank=rank, world_size=2), "ds")
        reading.load_state_dict(state)
        after += read(reading, 100)
    assert other.epoch == 3
    order = first.sampler.order(3).tolist()
    assert before == order[:12]
    assert sorted(after) == sorted(order[12:])


def test_before_an_iteration_the_state_is_where_the_next_one_starts() -> None:
    reading = EpochReading(EpochBatchSampler(Source(10), 2, seed=1), "ds")
    assert reading.state_dict()["position"] == 0
    reading.sampler.resume_at(0, 6)
    assert reading.state_dict()["position"] == 6
    progress = reading.begin()
    assert (progress.start, progress.batches, progress.length) == (6, 2, 10)


def test_a_state_of_other_data_or_seed_is_refused() -> None:
    saved = EpochReading(EpochBatchSampler(Source(10, "a"), 2, seed=1), "ds").state_dict()
    other = EpochReading(EpochBatchSampler(Source(10, "b"), 2, seed=1), "ds")
    with pytest.raises(LoaderStateError, match=r"^ds: the state was saved reading dataset a"):
        other.load_state_dict(saved)
    reseeded = EpochReading(EpochBatchSampler(Source(10, "a"), 2, seed=2), "ds")
    with pytest.raises(LoaderStateError, match="saved with seed=1, this loader has seed=2"):
        reseeded.load_state_dict(saved)


class Unnamed:
    epoch = 0

    def __len__(self) -> int:
        return 4


def test_a_dataset_without_an_identity_iterates_but_has_no_state() -> None:
    reading = EpochReading(EpochBatchSampler(Unnamed(), 2), "ds")
    assert sorted(read(reading, 5)) == [0, 1, 2, 3]
    with pytest.raises(TypeError, match=r"^ds: a loader's state needs .* got Unnamed"):
        reading.state_dict()
