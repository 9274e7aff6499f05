"""NVIDIA DALI as the reader, over the same shards and their `.idx` files
(`fn.readers.webdataset` for tars, `fn.readers.tfrecord` for record shards), or a `Dataset`'s
samples fed in fastpack's order (`fn.external_source`); DALI itself is imported only when a
loader is made."""

from .loader import DaliLoader
from .make import make_dali_loader
from .options import DaliOptions
from .transforms import register_transform

__all__ = ["DaliLoader", "DaliOptions", "make_dali_loader", "register_transform"]
