"""Which kind of source a path or URL is, and opening it for a scan."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SourceError
from .coco import scan_coco
from .folder import scan_folder
from .list_file import LIST_SUFFIXES, scan_list
from .parquet import scan_parquet
from .scan import SourceOptions, SourceScan
from .wds import scan_wds
from .wds_urls import expand, is_local, is_wds_url, local_path, names_tars, scheme

SOURCE_FORMATS = ("auto", "folder", "list", "wds", "coco", "parquet")
# the kind a file's suffix makes it
_FILE_KINDS = {".tar": "wds", ".json": "coco", ".parquet": "parquet"} | dict.fromkeys(
    LIST_SUFFIXES, "list"
)
_FILE_ONLY = ("list", "coco")


def _directory_kind(path: Path) -> str:
    """`wds` for a directory of `*.tar` files, `parquet` for one of `*.parquet` files (and no
    subfolders either way); otherwise `folder` (an ImageFolder). SourceError for both."""
    suffixes = set()
    with os.scandir(path) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                return "folder"
            suffixes.add(os.path.splitext(entry.name)[1])
    if {".tar", ".parquet"} <= suffixes:
        raise SourceError(
            f"{path}: holds both .tar and .parquet files; give the format (wds or parquet)"
        )
    return "wds" if ".tar" in suffixes else "parquet" if ".parquet" in suffixes else "folder"


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
    """One of `SOURCE_FORMATS` but auto: `source_format` checked against the source, or detected.

    A local path is an ImageFolder directory, a directory of `.tar` files (wds) or of `.parquet`
    files, a `.tar`, a list file, a `.parquet` file, or a `.json` file: a COCO instances file (its
    content is checked when the scan opens it: detection does not read a file that may be
    hundreds of megabytes). A `pipe:` command, a `scheme://` URL, or a `{..}` pattern (that is not
    itself an existing path) is a webdataset source."""
    text = os.fspath(source)
    if is_wds_url(text):
        return _detect_url(text, source_format)
    path = Path(text)
    if not path.exists():
        raise SourceError(f"{path}: source not found")
    if path.is_dir():
        if source_format in _FILE_ONLY:
            raise SourceError(f"{path}: a {source_format} source must be a file, found a directory")
        if source_format != "auto":
            return source_format
        return _directory_kind(path)
    suffix = path.suffix.lower()
    detected = _FILE_KINDS.get(suffix, "")
    if not detected:
        raise SourceError(
            f"{path}: unknown source format; expected an ImageFolder directory, a directory of "
            f".tar or .parquet files, a .tar, a list file ({', '.join(LIST_SUFFIXES)}), a COCO "
            "instances .json, a .parquet, or webdataset URLs"
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
    """Open `source` (a `kind` source) for its scan, told `options` (the fields to store, where
    COCO images are, whether to render masks); a webdataset source copies remote shards, and a
    Parquet or COCO source spills bytes, under `work_dir`."""
    if kind == "folder":
        return scan_folder(Path(source))
    if kind == "list":
        return scan_list(Path(source), options)
    if kind == "coco":
        return scan_coco(Path(source), work_dir, options)
    if kind == "parquet":
        return scan_parquet(Path(source), work_dir, options)
    if kind == "wds":
        return scan_wds(source, work_dir, options)
    raise SourceError(
        f"{source}: unknown source kind {kind!r}; expected one of {SOURCE_FORMATS[1:]}"
    )
