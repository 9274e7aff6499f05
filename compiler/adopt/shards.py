"""Which shards the sources of `fastpack index` name, their format, and their common root.

A source is a local `.tar` or TFRecord file, a directory of them (in name order, not
recursive), a glob, a URL of one object, a webdataset brace pattern of URLs or paths
(`s3://b/train-{000000..000099}.tar`), or a URL prefix, whose objects of the format are listed
(in name order). The format is `wds` for `.tar` names and `tfrecord` for TFRecord names
(`sources.tfrecord.files.is_tfrecord_name`) unless given. The root is the shards' deepest common
directory (or URL prefix); each shard's name is its path under it.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from fastpack.formats.shard_root import is_url
from fastpack.storage import Location

from ..errors import SourceError
from ..sources.tfrecord.files import is_tfrecord_name
from ..sources.urls import expand
from .job import ShardSource

Format = Literal["wds", "tfrecord", "auto"]
FORMATS: tuple[Format, ...] = ("wds", "tfrecord", "auto")
_GLOB_MARKS = ("*", "?", "[")


def _is_tar(name: str) -> bool:
    return name.lower().endswith(".tar")


def _of_format(name: str, fmt: Format) -> bool:
    if fmt == "wds":
        return _is_tar(name)
    if fmt == "tfrecord":
        return is_tfrecord_name(name)
    return _is_tar(name) or is_tfrecord_name(name)


def _local(source: str, fmt: Format) -> list[str]:
    if os.path.isdir(source):
        with os.scandir(source) as it:
            names = sorted(e.name for e in it if e.is_file() and _of_format(e.name, fmt))
        if not names:
            raise SourceError(f"{source}: no {_what(fmt)} in the directory")
        return [os.path.join(os.path.abspath(source), n) for n in names]
    if any(mark in source for mark in _GLOB_MARKS) and not os.path.exists(source):
        found = sorted(p for p in glob.glob(source, recursive=True) if os.path.isfile(p))
        if not found:
            raise SourceError(f"{source}: the pattern matches no file")
        return [os.path.abspath(p) for p in found]
    if not os.path.isfile(source):
        raise SourceError(f"{source}: not found")
    return [os.path.abspath(source)]


def _what(fmt: Format) -> str:
    return {"wds": ".tar files", "tfrecord": "TFRecord files"}.get(fmt, ".tar or TFRecord files")


def _remote(source: str, fmt: Format, storage_options: Mapping[str, Any]) -> list[str]:
    if "{" in source:
        return expand(source)
    if _of_format(source.rstrip("/"), fmt) and not source.endswith("/"):
        return [source]
    try:
        location = Location(source, storage_options)
        names = sorted(n for n, _ in location.walk() if "/" not in n and _of_format(n, fmt))
    except (OSError, ValueError) as e:
        raise SourceError(f"{source}: cannot list: {e}") from e
    if not names:
        raise SourceError(f"{source}: no {_what(fmt)} under the prefix")
    return [location.url_of(n) for n in names]


def detect_format(urls: Sequence[str], fmt: Format) -> Literal["wds", "tfrecord"]:
    """The format of the shards `urls`: `fmt`, or for `auto` the one every name has."""
    if fmt != "auto":
        return fmt
    if all(_is_tar(u) for u in urls):
        return "wds"
    if all(is_tfrecord_name(u) for u in urls):
        return "tfrecord"
    raise SourceError(
        "the shards are not all .tar files nor all TFRecord files: give --format wds or tfrecord"
    )


def _root(urls: Sequence[str]) -> str:
    """The deepest directory (or URL prefix) that holds every one of `urls`."""
    parents = sorted({u.rsplit("/", 1)[0] if is_url(u) else os.path.dirname(u) for u in urls})
    if is_url(urls[0]):
        common = parents[0]
        for parent in parents[1:]:
            while not (parent == common or parent.startswith(common + "/")):
                common = common.rsplit("/", 1)[0]
        return common
    return os.path.commonpath(parents)


def list_shards(
    sources: Sequence[str], fmt: Format, storage_options: Mapping[str, Any] | None = None
) -> tuple[Literal["wds", "tfrecord"], str, list[ShardSource]]:
    """`(format, root, shards)` of `sources`, shards in the order given (see the docstring)."""
    if not sources:
        raise SourceError("no source: give the shards to index")
    urls: list[str] = []
    for source in sources:
        remote = is_url(source)
        found = _remote(source, fmt, storage_options or {}) if remote else _local(source, fmt)
        urls += [u if is_url(u) else os.path.abspath(u) for u in found]
    if len({is_url(u) for u in urls}) > 1:
        raise SourceError("the shards are partly local and partly URLs: index them apart")
    if len(set(urls)) != len(urls):
        raise SourceError("a shard is named twice among the sources")
    kind = detect_format(urls, fmt)
    root = _root(urls)
    shards = []
    for number, url in enumerate(urls):
        name = url[len(root) + 1 :] if is_url(url) else os.path.relpath(url, root)
        shards.append(ShardSource(number, url, name.replace(os.sep, "/")))
    return kind, root, shards
