"""Views: named subsets of a dataset's samples (formats/SPEC.md section 8), selected from the
index's columns and written beside the dataset or elsewhere, never touching the shards."""

from .build import build_views
from .options import ViewOptions, ViewOptionsError, parse_split
from .output import ViewWriteError, save_views, view_targets
from .select import select_views

__all__ = [
    "ViewOptions",
    "ViewOptionsError",
    "ViewWriteError",
    "build_views",
    "parse_split",
    "save_views",
    "select_views",
    "view_targets",
]
