"""A seeded permutation of [0, N) evaluated at any positions, without materialising it.

A balanced Feistel network on `2h` bits (`4**h` the smallest power of 4 >= N) with six rounds,
each keyed by `(seed, epoch, round)` through the SplitMix64 finalizer, is a bijection of
[0, 4**h); cycle-walking (applying it again while the value is >= N) restricts it to a bijection
of [0, N). Six rounds of a well-mixed round function make the result indistinguishable from a
uniform permutation for shuffling purposes (Luby and Rackoff: four already suffice for a random
round function). Its cost per position does not depend on N, and nothing of size N is ever
built (benchmarks/readers/COSTS.md compares it with materialising the permutation).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..image.draws import GOLDEN, epoch_key, mix

ROUNDS = 6

Positions = npt.NDArray[np.int64]


class KeyedPermutation:
    """The permutation of `range(n)` keyed by `(seed, epoch)`; `perm(positions)` gives the
    sample at each position."""

    def __init__(self, n: int, seed: int, epoch: int) -> None:
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        self.n = n
        half_bits = max(1, (max(n - 1, 1).bit_length() + 1) // 2)
        self._half_bits = np.uint64(half_bits)
        self._mask = np.uint64((1 << half_bits) - 1)
        rounds = epoch_key(seed, epoch) + np.arange(1, ROUNDS + 1, dtype=np.uint64) * GOLDEN
        self._keys = [np.uint64(k) for k in mix(rounds)]

    def _feistel(self, values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        left, right = values >> self._half_bits, values & self._mask
        for key in self._keys:
            left, right = right, left ^ (mix(right ^ key) & self._mask)
        result: npt.NDArray[np.uint64] = (left << self._half_bits) | right
        return result

    def __call__(self, positions: Positions) -> Positions:
        """The samples at `positions` (each in [0, n))."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size and (positions.min() < 0 or positions.max() >= self.n):
            raise IndexError(f"positions must be in [0, {self.n})")
        values = self._feistel(positions.astype(np.uint64))
        outside = values >= np.uint64(self.n)
        while outside.any():  # cycle-walking: at most a few steps, since 4**h < 4n
            values[outside] = self._feistel(values[outside])
            outside = values >= np.uint64(self.n)
        return values.astype(np.int64)


def permute_many(
    sizes: npt.NDArray[np.int64],
    seeds: npt.NDArray[np.int64],
    epochs: npt.NDArray[np.int64],
    positions: Positions,
) -> Positions:
    """`KeyedPermutation(sizes[k], seeds[k], epochs[k])(positions[k])` for every `k` at once:
    many small permutations (a balanced view's classes) evaluated in one pass, each element
    with its own domain, key and cycle-walk."""
    n = np.asarray(sizes, np.int64)
    positions = np.asarray(positions, np.int64)
    if positions.size and (np.any(positions < 0) or np.any(positions >= n)):
        raise IndexError("positions must be in [0, size) of their permutation")
    bits = np.maximum(1, (_bit_length(np.maximum(n - 1, 1)) + 1) // 2).astype(np.uint64)
    mask = (np.uint64(1) << bits) - np.uint64(1)
    key = mix(mix(np.asarray(seeds, np.uint64) + GOLDEN) ^ np.asarray(epochs, np.uint64))
    keys = [mix(key + np.array([r], np.uint64) * GOLDEN) for r in range(1, ROUNDS + 1)]
    limit = n.astype(np.uint64)

    def feistel(values: npt.NDArray[np.uint64], at: npt.NDArray[np.intp]) -> npt.NDArray[np.uint64]:
        b, m = bits[at], mask[at]
        left, right = values >> b, values & m
        for k in keys:
            left, right = right, left ^ (mix(right ^ k[at]) & m)
        result: npt.NDArray[np.uint64] = (left << b) | right
        return result

    everywhere = np.arange(positions.size)
    values = feistel(positions.astype(np.uint64), everywhere)
    outside = np.flatnonzero(values >= limit)
    while outside.size:  # cycle-walking, element by element's own domain
        values[outside] = feistel(values[outside], outside)
        outside = outside[values[outside] >= limit[outside]]
    return values.astype(np.int64)


def _bit_length(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """`int.bit_length` of each (positive) value."""
    lengths: npt.NDArray[np.int64] = np.floor(np.log2(values.astype(np.float64))).astype(np.int64)
    lengths += 1
    # float rounding near powers of two: fix by one where 2**length is wrong
    lengths[(np.uint64(1) << lengths.astype(np.uint64)) <= values.astype(np.uint64)] += 1
    lengths[(np.uint64(1) << (lengths - 1).astype(np.uint64)) > values.astype(np.uint64)] -= 1
    return lengths
