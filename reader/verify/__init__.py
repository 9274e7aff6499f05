"""Checking a dataset's files against each other and their checksums, local or at a URL."""

from .local import VerifyReport, verify_dataset
from .remote import verify_remote

__all__ = ["VerifyReport", "verify_dataset", "verify_remote"]
