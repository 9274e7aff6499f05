"""Epoch orders: exact quotas, each group wrapping on its own, balanced classes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from fastpack.reader.order.balance import balanced_order
from fastpack.reader.order.epoch_order import (
    PermutedOrder,
    QuotaOrder,
    group_seed,
    quotas,
)
from fastpack.reader.order.permutation import KeyedPermutation, permute_many


def test_quotas_sum_exactly_and_follow_the_weights() -> None:
    assert quotas([0.7, 0.3], 10) == [7, 3]
    assert quotas([1, 1, 1], 10) == [4, 3, 3]  # largest remainder, ties to the first
    for total in (1, 7, 1000, 12_345):
        assert sum(quotas([0.2, 0.5, 0.31], total)) == total
    for bad in ([], [1, 0], [1, -2], [float("nan")]):
        with pytest.raises(ValueError, match="weights"):
            quotas(bad, 10)


def test_quota_order_meets_quotas_every_epoch_and_wraps_each_group() -> None:
    small, large = PermutedOrder(5, group_seed(1, 0)), PermutedOrder(40, group_seed(1, 1))
    order = QuotaOrder([(small, 0), (large, 5)], [12, 8], seed=1)
    drawn: list[list[int]] = []
    for epoch in range(5):
        samples = order.samples(epoch, np.arange(len(order))).tolist()
        counts = Counter(s < 5 for s in samples)
        assert (counts[True], counts[False]) == (12, 8)  # exact quotas, no drift
        drawn.append(samples)
    # the small group (5 samples, 12 draws per epoch) goes round its own permutations: every
    # 5 consecutive draws of it hold each sample once
    small_draws = [s for e in range(5) for s in sorted_draws(order, e, group=0)]
    for k in range(0, len(small_draws) - 4, 5):
        assert sorted(small_draws[k : k + 5]) == [0, 1, 2, 3, 4]
    # the large group (40 samples, 8 per epoch) is read on across epochs: 5 epochs, 40 distinct
    large_seen = [s for e in range(5) for s in sorted_draws(order, e, group=1)]
    assert sorted(large_seen) == list(range(5, 45))
    # a function of (seed, epoch, position): any slice agrees with the whole
    assert order.samples(3, np.array([7, 2, 19])).tolist() == [drawn[3][i] for i in (7, 2, 19)]


def sorted_draws(order: QuotaOrder, epoch: int, group: int) -> list[int]:
    """The draws of `group` in `epoch`, in draw order (not position order)."""
    inner, offset = order.groups[group]
    q = int(order.quota[group])
    draws = epoch * q + np.arange(q)
    n = len(inner)
    return [int(inner.samples(int(t // n), np.array([t % n]))[0]) + offset for t in draws]


def test_balanced_order_gives_each_class_an_equal_share() -> None:
    labels = np.array([0] * 90 + [1] * 9 + [2] * 1, np.int64)
    order = balanced_order(labels, seed=4, shuffle=True)
    assert len(order) == 100
    for epoch in range(3):
        samples = order.samples(epoch, np.arange(100))
        shares = Counter(labels[samples].tolist())
        assert sorted(shares.values()) == [33, 33, 34]
        # class 2's one sample fills its whole share
        assert Counter(samples.tolist())[99] == shares[2]
    # in epoch 0 class 1's share (33 draws) is 3 rounds of its 9 samples and 6 more
    first = Counter(order.samples(0, np.arange(100)).tolist())
    assert sorted(first[i] for i in range(90, 99)) == [3, 3, 3, 4, 4, 4, 4, 4, 4]
    unshuffled = balanced_order(labels, seed=4, shuffle=False)
    head = labels[unshuffled.samples(0, np.arange(34))]
    assert set(head.tolist()) == {0}  # without shuffle the groups come one after the other


def test_many_permutations_at_once_equal_each_one() -> None:
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 300, 2000)
    seeds, epochs = rng.integers(0, 2**62, 2000), rng.integers(0, 5, 2000)
    places = (rng.random(2000) * sizes).astype(np.int64)
    one_by_one = [
        int(KeyedPermutation(int(n), int(s), int(e))(np.array([p]))[0])
        for n, s, e, p in zip(sizes, seeds, epochs, places, strict=True)
    ]
    assert permute_many(sizes, seeds, epochs, places).tolist() == one_by_one
    with pytest.raises(IndexError):
        permute_many(sizes[:1], seeds[:1], epochs[:1], sizes[:1])


def test_balanced_order_in_one_pass_equals_group_by_group() -> None:
    labels = np.random.default_rng(2).integers(0, 50, 3000)
    fast = balanced_order(labels, seed=9, shuffle=True)
    slow = balanced_order(labels, seed=9, shuffle=True)
    slow._flat = None  # the general path, one group at a time
    for epoch in (0, 1, 7):
        positions = np.arange(len(fast))
        assert np.array_equal(fast.samples(epoch, positions), slow.samples(epoch, positions))
