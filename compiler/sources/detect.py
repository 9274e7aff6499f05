"""Which kind of source a path or URL is, and opening it for a scan."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SourceError
from .folder import scan_folder
from .list_file import LIST_SUFFIXES, scan_list
from .scan import SourceOptions, SourceScan
from .wds import scan_wds
from .wds_urls import expand, is_local, is_wds_url, local_path, names_tars, scheme

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


def _detect_url(source: str, source_format: str) -> str:
    """`wds` for a `pipe:` command, a pattern, or a URL of a `.tar` (any URL with `wds`); the
    local shards it names must exist."""
    if source_format not in ("auto", "wds"):
        raise SourceError(
            f"{source}: a {source_format} source must be a local path; URLs, pipe: commands and "
            "{..} patterns are webdataset (wds) sources"
        )
    urls = expand(source)
    missing = [url for url in urls if is_local(url) and not os.path.isfile(local_path(url))]
    if len(missing) == len(urls):
        raise SourceError(f"{source}: matches no file")
    if missing:
        listed = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise SourceError(
            f"{source}: {len(missing)} of its {len(urls)} shards are not files: {listed}"
        )
    if source_format == "auto" and urls == [source] and not names_tars(source):
        raise SourceError(
            f"{source}: unknown source format; a URL source must name .tar files (webdataset "
            "shards), or be given with the wds format"
        )
    return "wds"


def detect_kind(source: str | os.PathLike[str], source_format: str) -> str:
    """`folder`, `list` or `wds`: `source_format` checked against the source, or detected.

    A local path is an ImageFolder directory, a directory of `.tar` files, a `.tar` or a list
    file. A `pipe:` command, a `scheme://` URL, or a `{..}` pattern (that is not itself an existing
    path) is a webdataset source."""
    text = os.fspath(source)
    if is_wds_url(text):
        return _detect_url(text, source_format)
    path = Path(text)
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
            f".tar files, a .tar, a list file ({', '.join(LIST_SUFFIXES)}), or webdataset URLs"
        )
    if source_format not in ("auto", detected):
        raise SourceError(f"{path}: a {source_format} source cannot be a {suffix} file")
    return detected


def source_id(source: str | os.PathLike[str]) -> str:
    """The source as a resume compares it: a URL or `pipe:` command as given, a local path or
    pattern made absolute."""
    text = os.fspath(source)
    return text if scheme(text) else os.path.abspath(text)


def open_source(
    source: str | os.PathLike[str],
    kind: str,
    work_dir: Path | None = None,
    options: SourceOptions | None = None,
) -> SourceScan:
    """Open `source` (a `kind` source) for its scan; a webdataset source copies remote shards
    (and any source its spilled bytes) under `work_dir`."""
    if kind == "folder":
        return scan_folder(Path(source))
    if kind == "list":
        return scan_list(Path(source))
    return scan_wds(source, work_dir)
