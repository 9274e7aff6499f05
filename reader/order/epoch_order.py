"""The order of an epoch: which sample sits at each position, as a function of (seed, epoch,
position) only, so that any process can evaluate any part of it and a run can resume anywhere.

`PermutedOrder` is a dataset's (or a view's) samples in a keyed permutation. `QuotaOrder` draws
from groups of samples with fixed quotas per epoch: a class-balanced view (one group per class)
and a `Mix` of datasets (one group per source). Each epoch meets its quotas exactly: group `g`
owns `quota[g]` of the epoch's positions (which ones: a keyed permutation of the epoch), and
fills them with draw numbers `epoch * quota[g] + k`, `k < quota[g]`, read from the group's own
order, which wraps around on its own (draw `t` is position `t % len` of the group's epoch
`t // len`). So a group smaller than its quota repeats, in a fresh permutation each time round,
and one larger than it is read on over the following epochs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ..image.draws import GOLDEN, mix
from .permutation import KeyedPermutation, permute_many

Positions = npt.NDArray[np.int64]
_GROUP_KEY = np.uint64(0xD1B54A32D192ED03)  # separates the groups' seeds from the epoch's


class EpochOrder(Protocol):
    """`len(order)` positions per epoch; `order.samples(epoch, positions)` the sample (an index
    of the dataset the order belongs to) at each."""

    def __len__(self) -> int: ...

    def samples(self, epoch: int, positions: Positions) -> Positions: ...


class PermutedOrder:
    """Samples `0..n-1`, in a permutation keyed by `(seed, epoch)` when `shuffle`, else in
    order."""

    def __init__(self, n: int, seed: int, *, shuffle: bool = True) -> None:
        self.n, self.seed, self.shuffle = int(n), int(seed), bool(shuffle)

    def __len__(self) -> int:
        return self.n

    def samples(self, epoch: int, positions: Positions) -> Positions:
        positions = np.asarray(positions, np.int64)
        if not self.shuffle:
            return positions
        return KeyedPermutation(self.n, self.seed, epoch)(positions)


class SubsetOrder:
    """The samples `members` (indices of the enclosing dataset), in `inner`'s order of
    `range(len(members))`."""

    def __init__(self, members: Positions, inner: EpochOrder) -> None:
        if len(inner) != len(members):
            raise ValueError(f"an order of {len(inner)} positions over {len(members)} members")
        self.members, self.inner = np.asarray(members, np.int64), inner

    def __len__(self) -> int:
        return len(self.inner)

    def samples(self, epoch: int, positions: Positions) -> Positions:
        return self.members[self.inner.samples(epoch, positions)]


def group_seed(seed: int, group: int) -> int:
    """The seed of group `group`'s own permutation: distinct per group and from `seed`."""
    key = mix(np.array([seed], np.uint64) ^ _GROUP_KEY) + np.array([group + 1], np.uint64) * GOLDEN
    return int(mix(key)[0] >> np.uint64(1))  # KeyedPermutation takes seeds below 2**63


def quotas(weights: Sequence[float], total: int) -> list[int]:
    """`total` split in proportion to `weights` (each > 0), rounded by largest remainder: the
    quotas sum to `total` exactly."""
    w = np.asarray(weights, np.float64)
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be positive and finite, got {list(weights)}")
    exact = w / w.sum() * total
    base = np.floor(exact).astype(np.int64)
    short = total - int(base.sum())
    order = np.argsort(-(exact - base), kind="stable")  # largest remainders first, ties by index
    base[order[:short]] += 1
    return [int(q) for q in base]


class QuotaOrder:
    """`epoch_size` positions per epoch drawn from `groups` (each an order over the samples of
    this order's dataset, already offset into it) with the exact `quota` of each (see the module
    docstring); `shuffle` spreads the groups' positions over the epoch with a permutation
    keyed by `(seed, epoch)`, else group 0's positions come first, then group 1's, ..."""

    def __init__(
        self,
        groups: Sequence[tuple[EpochOrder, int]],
        quota: Sequence[int],
        seed: int,
        *,
        shuffle: bool = True,
    ) -> None:
        if len(groups) != len(quota) or not groups:
            raise ValueError(f"{len(groups)} groups and {len(quota)} quotas")
        for (order, _), q in zip(groups, quota, strict=True):
            if q < 0 or (q > 0 and len(order) == 0):
                raise ValueError(f"a quota of {q} from a group of {len(order)} samples")
        self.groups = list(groups)
        self.quota = np.asarray(quota, np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.quota)]).astype(np.int64)
        self.size = int(self.starts[-1])
        self.seed, self.shuffle = int(seed), bool(shuffle)
        self._flat = _FlatGroups.of(self.groups)

    def __len__(self) -> int:
        return self.size

    def samples(self, epoch: int, positions: Positions) -> Positions:
        positions = np.asarray(positions, np.int64)
        slots = positions
        if self.shuffle:
            slots = KeyedPermutation(self.size, self.seed, epoch)(positions)
        group = np.searchsorted(self.starts, slots, side="right") - 1
        draws = int(epoch) * self.quota[group] + (slots - self.starts[group])
        if self._flat is not None:
            return self._flat.samples(group, draws)
        out = np.empty(len(slots), np.int64)
        for g in np.unique(group).tolist():
            where = np.flatnonzero(group == g)
            order, offset = self.groups[g]
            n = len(order)
            rounds, places = draws[where] // n, draws[where] % n
            picked = np.empty(len(where), np.int64)
            for r in np.unique(rounds).tolist():  # one or two of the group's own epochs
                here = rounds == r
                picked[here] = order.samples(r, places[here])
            out[where] = picked + offset
        return out


class _FlatGroups:
    """Groups that are each a keyed permutation of their members (a balanced view's classes),
    evaluated for all groups in one vectorized pass (`permute_many`) rather than group by group:
    what `QuotaOrder.samples` computes, at a cost that does not grow with the number of groups."""

    def __init__(
        self,
        sizes: Positions,
        seeds: Positions,
        shuffle: bool,
        members: Positions,
        starts: Positions,
    ) -> None:
        self.sizes, self.seeds, self.shuffle = sizes, seeds, shuffle
        self.members, self.starts = members, starts

    @staticmethod
    def of(groups: Sequence[tuple[EpochOrder, int]]) -> _FlatGroups | None:
        """The flat form of `groups` when each is a `SubsetOrder` over a `PermutedOrder`, all
        shuffled alike; else None."""
        parts = []
        for order, offset in groups:
            if not isinstance(order, SubsetOrder) or not isinstance(order.inner, PermutedOrder):
                return None
            parts.append((order.members + offset, order.inner))
        if len({inner.shuffle for _, inner in parts}) != 1:
            return None
        sizes = np.array([inner.n for _, inner in parts], np.int64)
        seeds = np.array([inner.seed for _, inner in parts], np.int64)
        members = np.concatenate([m for m, _ in parts]) if parts else np.zeros(0, np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return _FlatGroups(sizes, seeds, parts[0][1].shuffle, members, starts)

    def samples(self, group: Positions, draws: Positions) -> Positions:
        n = self.sizes[group]
        rounds, places = draws // n, draws % n
        if self.shuffle:
            places = permute_many(n, self.seeds[group], rounds, places)
        return self.members[self.starts[group] + places]
