"""Datasets over shards that already exist (`fastpack index`): an index, a manifest and DALI
indexes over webdataset tars or TFRecord files, which stay where they are (see `adopt`)."""

from .adopt import IndexOptions, index_shards

__all__ = ["IndexOptions", "index_shards"]
