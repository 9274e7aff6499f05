"""The order of a class-balanced view: each class an equal share of every epoch."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .epoch_order import PermutedOrder, QuotaOrder, SubsetOrder, group_seed, quotas


def balanced_order(labels: npt.NDArray[np.int64], seed: int, *, shuffle: bool) -> QuotaOrder:
    """`len(labels)` positions per epoch over samples `0..len(labels)-1`, shared equally by the
    classes present (largest remainder decides who gets one more): a sample of class `c` is
    drawn `len(labels) / (classes * count(c))` times per epoch on average, each class through
    its own keyed permutation, repeated or carried over to the next epoch as `QuotaOrder` says.
    So every epoch has the same length and every rank the same number of samples."""
    labels = np.asarray(labels, np.int64)
    classes, inverse = np.unique(labels, return_inverse=True)
    by_class = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[by_class], np.arange(len(classes) + 1))
    groups = []
    for g in range(len(classes)):
        members = by_class[bounds[g] : bounds[g + 1]].astype(np.int64)
        inner = PermutedOrder(len(members), group_seed(seed, g), shuffle=shuffle)
        groups.append((SubsetOrder(members, inner), 0))
    if not groups:
        return QuotaOrder([(PermutedOrder(0, seed), 0)], [0], seed, shuffle=shuffle)
    share = quotas([1.0] * len(groups), len(labels))
    return QuotaOrder(groups, share, seed, shuffle=shuffle)
