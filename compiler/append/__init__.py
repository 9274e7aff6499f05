"""Appends: new inputs built into new shards and published as a dataset's next version,
without rewriting a byte of the earlier versions (formats/SPEC.md, dataset versions)."""

from .append import append
from .errors import AppendError, AppendLockedError
from .summary import AppendSummary

__all__ = ["AppendError", "AppendLockedError", "AppendSummary", "append"]
