"""Parquet sources: one `.parquet` file or a directory of them, laid out as Hugging Face datasets
are (`source`)."""

from .source import scan_parquet

__all__ = ["scan_parquet"]
