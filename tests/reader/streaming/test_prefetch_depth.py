"""How far ahead a stream fetches: chosen from the download and read times it measures."""

from __future__ import annotations

import time

import pytest
from fastpack.reader.streaming.prefetch import PrefetchDepth


def read(depth: PrefetchDepth, positions: range, seconds_each: float) -> None:
    """Ask for each shard in turn, reading each for `seconds_each` once it has come."""
    for position in positions:
        depth.asking(position)
        depth.received()
        time.sleep(seconds_each)


def test_before_any_measure_it_fetches_one_window_ahead() -> None:
    assert PrefetchDepth(window=4, limit=8).depth == 4
    assert PrefetchDepth(window=4, limit=2).depth == 2


def test_slow_downloads_against_fast_reads_fetch_further_ahead_up_to_the_limit() -> None:
    depth = PrefetchDepth(window=2, limit=6)
    read(depth, range(4), 0.01)
    depth.downloaded(0.045)  # about 4.5 reads' time: 5 shards in flight, + 1
    assert depth.depth == 6
    depth.downloaded(10.0)
    assert depth.depth == 6  # never past the limit


def test_fast_downloads_fetch_one_window_ahead() -> None:
    depth = PrefetchDepth(window=3, limit=8)
    read(depth, range(4), 0.01)
    depth.downloaded(0.001)
    assert depth.depth == 3


@pytest.mark.parametrize("measured", [0.0, 5.0])
def test_a_fixed_depth_ignores_what_it_measures(measured: float) -> None:
    depth = PrefetchDepth(window=4, limit=1, fixed=True)
    read(depth, range(3), 0.001)
    depth.downloaded(measured)
    assert depth.depth == 1


def test_time_spent_waiting_for_a_shard_is_not_read_time() -> None:
    depth = PrefetchDepth(window=1, limit=100)
    depth.asking(0)
    depth.received()
    time.sleep(0.01)  # reading shard 0
    depth.asking(1)
    time.sleep(0.05)  # waiting for shard 1: not counted as reading
    depth.received()
    depth.downloaded(0.3)
    assert depth.depth >= 8  # 0.3 s / ~0.01 s per shard + 1 (with the 0.05 s wait: at most 6)
