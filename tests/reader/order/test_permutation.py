"""The keyed permutation behind `EpochBatchSampler`: a bijection of [0, N), evaluated at any
positions, that shuffles like a uniform permutation."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from fastpack.reader import EpochBatchSampler
from fastpack.reader.order.permutation import KeyedPermutation


@pytest.mark.parametrize("n", [1, 2, 3, 5, 63, 64, 65, 1000, 4097, 100_003])
def test_a_bijection_of_range_n(n: int) -> None:
    order = KeyedPermutation(n, seed=3, epoch=1)(np.arange(n))
    assert np.array_equal(np.sort(order), np.arange(n))


def test_positions_anywhere_give_the_order_at_those_positions() -> None:
    perm = KeyedPermutation(10_000, seed=0, epoch=0)
    order = perm(np.arange(10_000))
    picks = np.array([9_999, 0, 17, 5_000, 17])
    assert np.array_equal(perm(picks), order[picks])
    assert np.array_equal(KeyedPermutation(10_000, seed=0, epoch=0)(picks), order[picks])
    for other in (KeyedPermutation(10_000, 1, 0), KeyedPermutation(10_000, 0, 1)):
        assert (other(np.arange(10_000)) != order).mean() > 0.99
    with pytest.raises(IndexError, match=r"positions must be in \[0, 10000\)"):
        perm(np.array([10_000]))
    with pytest.raises(ValueError, match="must be >= 0"):
        KeyedPermutation(10, seed=-1, epoch=0)


def test_it_shuffles_like_a_uniform_permutation() -> None:
    n, keys = 200, 2_000
    orders = np.stack([KeyedPermutation(n, seed, 0)(np.arange(n)) for seed in range(keys)])
    # where sample 0 lands, over the keys: uniform over the n positions (chi-square, 199 df)
    landing = np.argmax(orders == 0, axis=1)
    counts = np.bincount(landing, minlength=n)
    chi2 = float(((counts - keys / n) ** 2 / (keys / n)).sum())
    assert chi2 < 270  # p < 0.001 above ~265
    # fixed points: Poisson with mean 1 for a uniform permutation
    assert 0.85 < (orders == np.arange(n)).sum(axis=1).mean() < 1.15
    # neighbours stay neighbours about as rarely as in a uniform permutation (2/n)
    adjacent = (np.abs(np.diff(orders, axis=1)) == 1).mean()
    assert adjacent < 3 / n
    # no trace of the identity: position and sample are uncorrelated
    assert abs(np.corrcoef(np.arange(n).repeat(keys), orders.T.ravel())[0, 1]) < 0.02


def test_the_sampler_never_builds_the_whole_order() -> None:
    class TenMillion:
        epoch = 2

        def __len__(self) -> int:
            return 10_000_000

    sampler = EpochBatchSampler(TenMillion(), 64, seed=1, rank=1, world_size=4)
    tracemalloc.start()
    try:
        first = next(iter(sampler))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # the order of 10M samples would be 80 MB
    positions = 1 + 4 * np.arange(64)
    assert first == KeyedPermutation(10_000_000, 1, 2)(positions).tolist()
    assert first.epoch == 2
