"""EpochBatchSampler: the epoch's order, and each rank's equal share of it."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest
from fastpack.reader import EpochBatchSampler


class Source:
    def __init__(self, n: int, epoch: int = 0) -> None:
        self.n, self.epoch = n, epoch

    def __len__(self) -> int:
        return self.n


def batches(sampler: EpochBatchSampler) -> list[list[int]]:
    return [list(b) for b in sampler]


@pytest.mark.parametrize(("n", "world", "batch"), [(10, 2, 3), (10, 3, 4), (7, 4, 2), (2, 3, 1)])
def test_ranks_share_the_epoch_equally(n: int, world: int, batch: int) -> None:
    source = Source(n, epoch=3)
    samplers = [
        EpochBatchSampler(source, batch, seed=5, rank=r, world_size=world) for r in range(world)
    ]
    per_rank = [batches(s) for s in samplers]
    assert len({len(b) for b in per_rank}) == 1  # the same number of batches on every rank
    assert all(len(b) == len(s) for b, s in zip(per_rank, samplers, strict=True))
    seen = Counter(i for b in per_rank for batch_ in b for i in batch_)
    assert set(seen) == set(range(n))  # every sample read
    assert sum(seen.values()) == -(-n // world) * world  # padded to an equal share
    assert sum(c - 1 for c in seen.values()) < world  # only the padding repeats
    order = samplers[0].order(3).tolist()
    assert [i for b in per_rank[0] for i in b] == (order * 3)[0 : -(-n // world) * world : world]


def test_drop_last_drops_the_uneven_tail() -> None:
    source = Source(11)
    samplers = [
        EpochBatchSampler(source, 2, drop_last=True, rank=r, world_size=3) for r in range(3)
    ]
    per_rank = [batches(s) for s in samplers]
    assert [len(b) for b in per_rank] == [1, 1, 1]  # 3 samples each, 1 full batch of 2
    flat = [i for b in per_rank for batch_ in b for i in batch_]
    assert len(flat) == len(set(flat)) == 6


def test_rank_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    sampler = EpochBatchSampler(Source(8), 4, shuffle=False)
    assert (sampler.rank, sampler.world_size) == (1, 2)
    assert batches(sampler) == [[1, 3, 5, 7]]
    assert (EpochBatchSampler(Source(8), 4, rank=0, world_size=1).world_size) == 1
    with pytest.raises(ValueError, match=r"rank must be in \[0, 2\), got 2"):
        EpochBatchSampler(Source(8), 4, rank=2, world_size=2)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE='two' is not an integer"):
        EpochBatchSampler(Source(8), 4)


def test_one_rank_reads_the_whole_order() -> None:
    sampler = EpochBatchSampler(Source(10), 4, seed=2, rank=0, world_size=1)
    assert [i for b in batches(sampler) for i in b] == sampler.order(0).tolist()
    assert [len(b) for b in batches(sampler)] == [4, 4, 2]


@pytest.mark.parametrize("stride", [1, 3])
def test_each_batch_names_the_one_its_worker_reads_next(stride: int) -> None:
    plain = list(EpochBatchSampler(Source(100), 8, seed=2))
    tagged = list(EpochBatchSampler(Source(100), 8, seed=2, ahead_stride=stride))
    assert [list(b) for b in tagged] == [list(b) for b in plain]  # the order is unchanged
    for k, batch in enumerate(tagged):
        expected = list(tagged[k + stride]) if k + stride < len(tagged) else None
        assert batch.ahead == expected
    assert all(b.ahead is None for b in plain)
    again = pickle.loads(pickle.dumps(tagged[0]))  # as a batch travels to a worker
    assert (list(again), again.epoch, again.ahead) == (list(tagged[0]), 0, tagged[0].ahead)
    with pytest.raises(ValueError, match="ahead_stride must be >= 0, got -1"):
        EpochBatchSampler(Source(100), 8, ahead_stride=-1)
