"""What every loader shares: the order of an epoch over a dataset, a view or a mix, its batches
for each rank (`EpochBatchSampler`), and the loaders' resumable state."""

from .balance import balanced_order
from .epoch_order import EpochOrder, PermutedOrder, QuotaOrder, SubsetOrder, quotas
from .permutation import KeyedPermutation
from .reading import EpochReading, OrderedSource
from .sampler import EpochBatch, EpochBatchSampler, EpochSource
from .state import Progress, make_state, read_state

__all__ = [
    "EpochBatch",
    "EpochBatchSampler",
    "EpochOrder",
    "EpochReading",
    "EpochSource",
    "KeyedPermutation",
    "OrderedSource",
    "PermutedOrder",
    "Progress",
    "QuotaOrder",
    "SubsetOrder",
    "balanced_order",
    "make_state",
    "quotas",
    "read_state",
]
