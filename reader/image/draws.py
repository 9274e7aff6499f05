"""The random numbers of random transforms: uniform draws in [0, 1) that are a function of
`(seed, epoch, sample index, position)` only, computed for a whole batch at once.

Each draw is the SplitMix64 finalizer (Steele, Lea and Flood, "Fast splittable pseudorandom
number generators", 2014) applied to a counter made of the four numbers; its top 53 bits give
the float. The hash is vectorized, so readers compute the draws of a whole batch in one call (or
1024 samples at a time with `iter_draws`): one call costs about as much for one sample as for
64 (benchmarks/readers/COSTS.md). Results do not depend on batching, worker count or order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's counter increment
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / (1 << 53)


def mix(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finalizer: a bijection of 64-bit words with full avalanche."""
    z = (z ^ (z >> np.uint64(30))) * _MUL1
    z = (z ^ (z >> np.uint64(27))) * _MUL2
    mixed: npt.NDArray[np.uint64] = z ^ (z >> np.uint64(31))
    return mixed


def epoch_key(seed: int, epoch: int) -> npt.NDArray[np.uint64]:
    """The hash key of `(seed, epoch)`, a 1-element array; uint64 array arithmetic wraps
    modulo 2**64 silently, which is what the hashes here want."""
    if seed < 0 or epoch < 0:
        raise ValueError(f"seed and epoch must be >= 0, got {seed} and {epoch}")
    return mix(mix(np.array([seed], np.uint64) + GOLDEN) ^ np.uint64(epoch))


def sample_draws(
    seed: int, epoch: int, indices: Iterable[int] | npt.NDArray[np.integer], count: int
) -> npt.NDArray[np.float64]:
    """`count` uniform draws in [0, 1) for each of `indices` in `epoch`: an array of shape
    `(len(indices), count)`; row `k` depends only on `(seed, epoch, indices[k])`."""
    rows = np.array(indices, dtype=np.int64).astype(np.uint64)
    sample = mix(epoch_key(seed, epoch) ^ (rows * GOLDEN))
    counters = sample[:, None] + np.arange(1, count + 1, dtype=np.uint64) * GOLDEN
    draws: npt.NDArray[np.float64] = (mix(counters) >> np.uint64(11)).astype(np.float64) * _TO_UNIT
    return draws


def iter_draws(
    seed: int, epoch: int, indices: Sequence[int], count: int, chunk: int = 1024
) -> Iterator[list[float] | None]:
    """Each sample's draws as a list (None when `count` is 0), computed `chunk` samples at a
    time: for readers that go sample by sample over a known order."""
    if count == 0:
        yield from (None for _ in indices)
        return
    for start in range(0, len(indices), chunk):
        yield from sample_draws(seed, epoch, indices[start : start + chunk], count).tolist()
