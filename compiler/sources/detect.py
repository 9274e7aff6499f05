"""Which kind of source a path or URL is, and opening it for a scan."""

from __future__ import annotations

import os
from pathlib import Path

from fastpack.storage import is_url

from ..errors import SourceError
from .list_file.source import LIST_SUFFIXES
from .registry import AUTO, SOURCES, source_of
from .scan import SourceOptions, SourceScan
from .tfrecord.files import glob_files, is_glob, is_tfrecord_name, names_tfrecord
from .urls import expand, is_local, is_wds_url, local_path, names_tars, scheme

_PATTERN_MARKS = ("{", "::", "${")
_PAIR = 2  # "both" kinds of files in a directory
_LISTED = 3  # missing shards a message names
_TFRECORD_NAMES = "*.tfrecord, *.tfrecords or *tfrecord*-NNNNN-of-NNNNN"


def _named_kind(name: str, suffix: str) -> str:
    """The kind a file's name makes it: a source whose `names_file` claims the name, else the
    one whose `suffixes` hold `suffix`; `""` for none."""
    for source in SOURCES.values():
        if source.names_file(name):
            return source.kind
    return next((s.kind for s in SOURCES.values() if suffix in s.suffixes), "")


def _directory_kind(path: Path) -> str:
    """The kind of a directory of nothing but one kind's files (a source with
    `directory_files`: `wds` for `*.tar` files, `parquet` for `*.parquet` files, `tfrecord` for
    TFRecord files, `tfrecord.files.is_tfrecord_name`), with no subfolders; otherwise `folder`
    (an ImageFolder). SourceError for a mix."""
    kinds = set()
    with os.scandir(path) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                return "folder"
            kind = _named_kind(entry.name, os.path.splitext(entry.name)[1])
            if kind and SOURCES[kind].directory_files is not None:
                kinds.add(kind)
    if len(kinds) > 1:
        found = [
            (files, s.kind)
            for s in SOURCES.values()
            if s.kind in kinds and (files := s.directory_files) is not None
        ]
        names = " and ".join(files for files, _ in found)
        raise SourceError(
            f"{path}: holds {'both ' if len(found) == _PAIR else ''}{names} files; give the format "
            f"({' or '.join(kind for _, kind in found)})"
        )
    return kinds.pop() if kinds else "folder"


def _detect_glob(source: str, source_format: str) -> str:
    """`tfrecord` for a glob that matches TFRecord files (any files, with that format)."""
    if source_format not in ("auto", "tfrecord"):
        raise SourceError(
            f"{source}: a {source_format} source must be an existing path; globs are TFRecord "
            "(tfrecord) sources"
        )
    files = glob_files(source)
    if not files:
        raise SourceError(f"{source}: matches no file")
    others = [f for f in files if not is_tfrecord_name(f)]
    if source_format == "auto" and others:
        raise SourceError(
            f"{source}: matches files not named as TFRecord files ({_TFRECORD_NAMES}), such as "
            f"{others[0]}; a glob source is TFRecord files: give it with the tfrecord format"
        )
    return "tfrecord"


def _detect_store_url(source: str, source_format: str) -> str | None:
    """`list` or `folder` for an object-store URL (`scheme://bucket/...`, not a pattern) that
    names a list object or an ImageFolder prefix; None for other URLs.

    A URL is a list file when given with the list format, or with auto when its name ends in a
    list suffix (`.csv`, `.tsv`, `.jsonl`); an ImageFolder prefix when given with the folder
    format, or with auto when it ends in `/`."""
    if not is_url(source) or any(mark in source for mark in _PATTERN_MARKS):
        return None
    named_list = os.path.splitext(source)[1].lower() in LIST_SUFFIXES
    if source_format == "list" or (source_format == "auto" and named_list):
        if not named_list:
            raise SourceError(
                f"{source}: a list source must be the URL of a list object ending in "
                f"{', '.join(LIST_SUFFIXES)}"
            )
        return "list"
    if source_format == "folder" or (source_format == "auto" and source.endswith("/")):
        return "folder"
    return None


def _detect_url(source: str, source_format: str) -> str:
    """`list` or `folder` for an object-store URL of a list or an ImageFolder prefix
    (`_detect_store_url`); `tfrecord` for URLs of TFRecord files (any URLs, with that format);
    otherwise `wds` for a `pipe:` command, a pattern, or a URL of a `.tar` (any URL with
    `wds`). The local files it names must exist."""
    kind = _detect_store_url(source, source_format)
    if kind is not None:
        return kind
    if source_format != AUTO and not source_of(source_format, source).shard_urls:
        raise SourceError(
            f"{source}: a {source_format} source must be a local path; URLs, pipe: commands and "
            "{..} patterns are webdataset (wds) or TFRecord (tfrecord) sources, or (URLs only) "
            "list files and ImageFolder prefixes (folder)"
        )
    urls = expand(source)
    missing = [url for url in urls if is_local(url) and not os.path.isfile(local_path(url))]
    if len(missing) == len(urls):
        raise SourceError(f"{source}: matches no file")
    if missing:
        listed = ", ".join(missing[:_LISTED]) + (", ..." if len(missing) > _LISTED else "")
        raise SourceError(
            f"{source}: {len(missing)} of its {len(urls)} shards are not files: {listed}"
        )
    records = source_format == "tfrecord" or (
        source_format == "auto" and all(names_tfrecord(url) for url in urls)
    )
    if records:
        remote_globs = [url for url in urls if not is_local(url) and "*" in url]
        if remote_globs:
            raise SourceError(
                f"{remote_globs[0]}: globs are read on local paths only; name remote files "
                "with a {..} pattern (train-{00000..01023}.tfrecord) or a :: list"
            )
        return "tfrecord"
    if source_format == "auto" and urls == [source] and not names_tars(source):
        raise SourceError(
            f"{source}: unknown source format; a URL source must name .tar files (webdataset "
            f"shards), TFRecord files ({_TFRECORD_NAMES}) or a list file "
            f"({', '.join(LIST_SUFFIXES)}), end in / (an ImageFolder prefix), or be given with "
            "the wds, tfrecord or folder format"
        )
    return "wds"


def _file_kind(path: Path, source_format: str) -> str:
    """The kind of a file source: by its name, or the format given (a tfrecord source may have
    any name but that of another kind)."""
    suffix = path.suffix.lower()
    detected = _named_kind(path.name, suffix)
    if source_format == "tfrecord" and not detected:
        return "tfrecord"
    if not detected:
        raise SourceError(
            f"{path}: unknown source format; expected an ImageFolder directory, a directory of "
            f".tar, .parquet or TFRecord files, a .tar, a list file ({', '.join(LIST_SUFFIXES)}), "
            "a COCO instances .json, a .parquet, a TFRecord file, a glob of TFRecord files, or "
            "webdataset URLs"
        )
    if source_format not in ("auto", detected):
        raise SourceError(f"{path}: a {source_format} source cannot be a {suffix} file")
    return detected


def detect_kind(source: str | os.PathLike[str], source_format: str) -> str:
    """A registered kind (`registry.SOURCES`): `source_format` checked against the source, or
    detected (`auto`).

    A local path is an ImageFolder directory, a directory of `.tar` files (wds), of `.parquet`
    files or of TFRecord files, a `.tar`, a list file, a `.parquet` file, a TFRecord file
    (`tfrecord.files`), or a `.json` file: a COCO instances file (its content is checked when the
    scan opens it: detection does not read a file that may be hundreds of megabytes). A glob
    (that is not itself an existing path) is TFRecord files. An object-store URL is a list file
    or an ImageFolder prefix by `_detect_store_url` (neither is read here). Otherwise a `pipe:`
    command, a `scheme://` URL, or a `{..}` pattern (that is not itself an existing path) is a
    webdataset source, or TFRecord files when every URL names one."""
    text = os.fspath(source)
    if is_wds_url(text):
        return _detect_url(text, source_format)
    if is_glob(text):
        return _detect_glob(text, source_format)
    path = Path(text)
    if not path.exists():
        raise SourceError(f"{path}: source not found")
    if path.is_dir():
        if source_format != AUTO and source_of(source_format, path).file_only:
            raise SourceError(f"{path}: a {source_format} source must be a file, found a directory")
        if source_format != "auto":
            return source_format
        return _directory_kind(path)
    return _file_kind(path, source_format)


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
    return source_of(kind, source).open(os.fspath(source), work_dir, options)
