"""The seeded draw of each sample that `fraction` and `split` cut (formats/SPEC.md section 8):
`v(s, i) = mix(K_s xor (i * G)) >> 11`, a 53-bit integer, uniform, that depends on the seed,
the stream `s` and the sample `i` only.

`mix` is SplitMix64's finalizer, as in the reader's random draws (`reader/image/draws.py`), but
kept here: a view's samples must stay what SPEC says whatever the reader's draws become.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
BITS = 53
FRACTION_STREAM = 1
SPLIT_STREAM = 2

U64 = npt.NDArray[np.uint64]


def mix(z: U64) -> U64:
    """SplitMix64's finalizer, in place on `z` (a fresh array), which it returns."""
    z ^= z >> np.uint64(30)
    z *= _MUL1
    z ^= z >> np.uint64(27)
    z *= _MUL2
    z ^= z >> np.uint64(31)
    return z


def draws(seed: int, stream: int, rows: npt.NDArray[np.int64]) -> U64:
    """`v(stream, i)` for each sample `i` of `rows` (SPEC section 8): integers in [0, 2^53)."""
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed {seed} is outside [0, 2^64)")
    key = mix(mix(np.array([seed], np.uint64) + GOLDEN) ^ np.uint64(stream))[0]
    z = rows.astype(np.uint64)
    z *= GOLDEN
    z ^= key
    drawn: U64 = mix(z) >> np.uint64(64 - BITS)
    return drawn


def threshold(fraction: float) -> int:
    """The integer cut of `fraction`: `v < threshold(F)` if and only if `v / 2^53 < F`."""
    return math.ceil(fraction * (1 << BITS))  # exact: a float times a power of two


def in_fraction(seed: int, rows: npt.NDArray[np.int64], fraction: float) -> npt.NDArray[np.bool_]:
    """Which of `rows` a fraction `fraction` keeps; nested: a smaller one keeps a subset."""
    kept: npt.NDArray[np.bool_] = draws(seed, FRACTION_STREAM, rows) < np.uint64(
        threshold(fraction)
    )
    return kept


def split_parts(
    seed: int, rows: npt.NDArray[np.int64], fractions: Sequence[float]
) -> npt.NDArray[np.intp]:
    """The part of each of `rows` in a split into parts of `fractions` (positive, summing to
    at most 1): an index into `fractions`, or `len(fractions)` for a row in none of them."""
    cuts = np.array([threshold(min(c, 1.0)) for c in np.cumsum(fractions)], np.uint64)
    parts: npt.NDArray[np.intp] = np.searchsorted(cuts, draws(seed, SPLIT_STREAM, rows), "right")
    return parts
