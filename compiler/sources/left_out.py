"""The one warning of source scans: input the dataset leaves out, said once per kind of input."""

from __future__ import annotations

import warnings


class LeftOutWarning(UserWarning):
    """Input of a source that the dataset leaves out: webdataset members that cannot be fields,
    Parquet columns no field can hold, COCO annotations of no image."""


def warn_left_out(message: str) -> None:
    warnings.warn(message, LeftOutWarning, stacklevel=3)
