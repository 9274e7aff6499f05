"""List-file sources: CSV, TSV or JSONL, one image per line (`source`), which column feeds which
field (`fields`), the list read from a path or a URL (`input`) and row sizes estimated for lists
at URLs (`url_sizes`)."""

from .source import LIST_SUFFIXES, scan_list

__all__ = ["LIST_SUFFIXES", "scan_list"]
