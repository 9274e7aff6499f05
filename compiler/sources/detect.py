"""Which kind of source a path is, and opening it for a scan."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SourceError
from .folder import scan_folder
from .list_file import LIST_SUFFIXES, scan_list
from .scan import SourceScan
from .wds import scan_wds

SOURCE_FORMATS = ("auto", "folder", "list", "wds")


def _looks_like_tar_directory(path: Path) -> bool:
    """A directory of `*.tar` files and no subfolders (which would make it an ImageFolder)."""
    tars = False
    with os.scandir(path) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                return False
            tars = tars or entry.name.endswith(".tar")
    return tars


def detect_kind(path: Path, source_format: str) -> str:
    """`folder`, `list` or `wds`: `source_format` checked against the path, or detected."""
    if not path.exists():
        raise SourceError(f"{path}: source not found")
    if path.is_dir():
        if source_format == "list":
            raise SourceError(f"{path}: a list source must be a file, found a directory")
        if source_format != "auto":
            return source_format
        return "wds" if _looks_like_tar_directory(path) else "folder"
    suffix = path.suffix.lower()
    detected = "wds" if suffix == ".tar" else "list" if suffix in LIST_SUFFIXES else ""
    if not detected:
        raise SourceError(
            f"{path}: unknown source format; expected an ImageFolder directory, a directory of "
            f".tar files, a .tar, or a list file ({', '.join(LIST_SUFFIXES)})"
        )
    if source_format not in ("auto", detected):
        raise SourceError(f"{path}: a {source_format} source cannot be a {suffix} file")
    return detected


def open_source(path: Path, kind: str) -> SourceScan:
    if kind == "folder":
        return scan_folder(path)
    if kind == "list":
        return scan_list(path)
    return scan_wds(path)
