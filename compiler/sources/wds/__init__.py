"""webdataset sources: tars grouped into samples by webdataset's rule (`source`), and which
members feed which fields (`fields`)."""

from .source import scan_wds

__all__ = ["scan_wds"]
