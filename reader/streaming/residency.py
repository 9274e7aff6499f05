"""Which shards each rank keeps in its node's cache for good, and the epoch order that lets it.

A cache smaller than the dataset saves nothing under LRU when every epoch reads the shards in a
new order: each shard is evicted before it comes round again. So a bounded cache is split in two:

- the *working set*: each stream's current window and the shards fetched ahead of it
  (`streams x (shuffle_window + prefetch) x largest shard`), evicted least recently used;
- the *resident* shards: the rest of the cache, filled once and never evicted.

Rank `r`'s resident shards are a function of `(seed, world size, its budget, the shard sizes)`
only: a seeded permutation of the shards (the same every epoch) is dealt round-robin to the
ranks, and each rank keeps the longest prefix of its hand that fits its byte budget and leaves
room in its span for one partial shard. Every epoch each rank reads all its resident shards plus
an equal share of the others (a new random share each epoch): the epoch order is built rank by
rank, resident shards first, then shards drawn from the shuffled rest until the rank's span is
full, and then the shards lying wholly inside each span are shuffled together. So every sample
is still read exactly once per epoch (the pad/drop rule of `plan` is unchanged), and a rank that
keeps a fraction `f` of its share fetches the other `1 - f`, plus the partial shards at the ends
of its streams' spans.
"""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
_HOME_KEY = 2  # seed streams distinct from plan.py's shard (0) and window (1) keys
_POOL_KEY = 3
_MIX_KEY = 4


def resident_shards(  # noqa: PLR0913 -- keyword inputs: a seeded choice
    counts: IntArray, sizes: IntArray, *, seed: int, world: int, budget: int, span: int
) -> list[IntArray]:
    """The resident shards of each rank: `budget` bytes each at most, and at most `span` minus
    the largest shard's samples (room for the partial shard that may start its span)."""
    if budget <= 0 or len(counts) == 0:
        return [np.zeros(0, np.int64) for _ in range(world)]
    order = np.random.default_rng((seed, _HOME_KEY)).permutation(len(counts))
    order = order[counts[order] > 0]  # a shard with no sample in the epoch (a view's) is not read
    room = span - int(counts.max())
    kept = []
    for rank in range(world):
        hand = order[rank::world]
        fits = (np.cumsum(sizes[hand]) <= budget) & (np.cumsum(counts[hand]) <= room)
        stop = int(np.argmin(fits)) if not fits.all() else len(hand)
        kept.append(np.sort(hand[:stop]).astype(np.int64))
    return kept


def resident_order(  # noqa: PLR0913 -- keyword inputs: a seeded order
    counts: IntArray,
    resident: list[IntArray],
    *,
    seed: int,
    epoch: int,
    span: int,
    shuffle: bool = True,
) -> IntArray:
    """The epoch's shard order: rank `r`'s span (`[r * span, (r + 1) * span)`) holds all of
    `resident[r]`, the rest of it drawn from the other shards in a seeded random order
    (`shuffle=False`: in shard order, and nothing is shuffled)."""
    held = np.zeros(len(counts), bool)
    for shards in resident:
        held[shards] = True
    pool = np.flatnonzero(~held)
    if shuffle:
        pool = np.random.default_rng((seed, epoch, _POOL_KEY)).permutation(pool)
    order: list[int] = []
    position, next_pool = 0, 0
    for rank, shards in enumerate(resident):
        order += shards.tolist()
        position += int(counts[shards].sum())
        while position < (rank + 1) * span and next_pool < len(pool):
            order.append(int(pool[next_pool]))
            position += int(counts[pool[next_pool]])
            next_pool += 1
    order += pool[next_pool:].tolist()
    result = np.array(order, np.int64)
    return _mix_spans(result, counts, seed=seed, epoch=epoch, span=span) if shuffle else result


def _mix_spans(order: IntArray, counts: IntArray, *, seed: int, epoch: int, span: int) -> IntArray:
    """Shuffle the shards lying wholly inside each rank's span among themselves, so that resident
    and fetched shards alternate in every stream of the rank."""
    ends = np.cumsum(counts[order])
    starts = ends - counts[order]
    mixed: IntArray = order.copy()
    for rank in range(-(-int(ends[-1]) // span) if len(order) else 0):
        inside = np.flatnonzero((starts >= rank * span) & (ends <= (rank + 1) * span))
        rng = np.random.default_rng((seed, epoch, _MIX_KEY, rank))
        mixed[inside] = order[inside][rng.permutation(len(inside))]
    return mixed


def ranks_per_node(world: int) -> int:
    """The ranks that share this node's cache: torchrun's `LOCAL_WORLD_SIZE`, else 1."""
    try:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    except ValueError:
        local = 1
    return max(1, min(local, world))


def rank_budget(
    cache_limit: int, *, world: int, streams: int, working_shards: int, largest: int
) -> int:
    """Bytes of resident shards each rank may keep: its part of the node's cache, less the
    working set of its `streams` (`working_shards` shards of at most `largest` bytes each)."""
    return cache_limit // ranks_per_node(world) - streams * working_shards * largest
