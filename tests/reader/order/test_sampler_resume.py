"""EpochBatchSampler.resume_at takes integers only, in the range the order's arithmetic holds:
a float or a string is a TypeError, never rounded, and an epoch or position out of range a
ValueError that says the range."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastpack.reader import EpochBatchSampler
from fastpack.reader.order.state import epoch_limit


class Source:
    def __init__(self, n: int, epoch: int = 0) -> None:
        self.n, self.epoch = n, epoch

    def __len__(self) -> int:
        return self.n


@pytest.mark.parametrize(("epoch", "position"), [(0, 12.5), (0, "3"), (0.5, 0), (1.0, 2), ("1", 2)])
def test_resume_at_refuses_what_is_not_an_integer(epoch: Any, position: Any) -> None:
    sampler = EpochBatchSampler(Source(10), 2)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        sampler.resume_at(epoch, position)
    assert sampler.start() == 0


def test_resume_at_refuses_an_epoch_or_position_out_of_range() -> None:
    sampler = EpochBatchSampler(Source(10), 2)
    limit = epoch_limit(10)
    with pytest.raises(ValueError, match=re.escape(f"epoch must be in [0, {limit}], got {2**64}")):
        sampler.resume_at(2**64, 0)
    with pytest.raises(ValueError, match=re.escape(f"got {limit + 1}")):
        sampler.resume_at(limit + 1, 0)
    with pytest.raises(ValueError, match=re.escape("position must be in [0, 10], got 11")):
        sampler.resume_at(0, 11)
    with pytest.raises(ValueError, match=re.escape("position must be in [0, 10], got -1")):
        sampler.resume_at(0, -1)
    sampler.resume_at(0, 4)
    assert sampler.start() == 4
    assert len(sampler) == 3  # 6 positions left, batches of 2
