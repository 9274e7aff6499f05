"""The torch loader: a DataLoader whose workers decode whole batches into shared-memory slots,
fed by a keyed permutation sampler that every rank evaluates without materialising it (a
`Dataset`), or each reading its own stream of the epoch (a `StreamingDataset`)."""

from .loader import make_torch_loader

__all__ = ["make_torch_loader"]
