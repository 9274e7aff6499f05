"""Checking a dataset's files against each other and their checksums, local or at a URL, and
view files against the dataset they were made for."""

from .local import VerifyReport, verify_dataset
from .remote import verify_remote
from .view_report import verify_view

__all__ = ["VerifyReport", "verify_dataset", "verify_remote", "verify_view"]
