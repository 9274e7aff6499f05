"""NVIDIA DALI as the reader, over the same shards (`fn.readers.webdataset` and the `.idx`
files); DALI itself is imported only when a loader is made."""

from .loader import DaliLoader, make_dali_loader

__all__ = ["DaliLoader", "make_dali_loader"]
