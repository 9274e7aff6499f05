"""Where a dataset's shards lie: the dataset itself, or the `shard_root` of a dataset over
adopted shards (formats/SPEC.md section 10)."""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote, urlsplit

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(location: str) -> bool:
    """Whether `location` is a URL (`scheme://...`) rather than a local path."""
    return _URL.match(location) is not None


def resolve_shard_root(dataset_location: str, shard_root: str | None) -> str:
    """The directory or URL prefix that shard names resolve against, for a dataset at
    `dataset_location` (a local path or a URL) whose manifest records `shard_root` (None: the
    dataset itself). A `file://` URL becomes its path; a relative root is joined to the
    dataset's location (`..` allowed), the way a relative link is."""
    if shard_root is None:
        return dataset_location.rstrip("/") if is_url(dataset_location) else dataset_location
    if shard_root.startswith("file://"):
        return unquote(urlsplit(shard_root).path)
    if is_url(shard_root):
        return shard_root.rstrip("/")
    if os.path.isabs(shard_root):
        return shard_root
    if is_url(dataset_location):
        parts = urlsplit(dataset_location.rstrip("/"))
        path = posixpath.normpath(posixpath.join(parts.path or "/", shard_root))
        return f"{parts.scheme}://{parts.netloc}{path}"
    return os.path.normpath(os.path.join(dataset_location, shard_root))


def join_location(root: str, name: str) -> str:
    """The shard `name` (a relative path) under `root` (a path or URL)."""
    return f"{root.rstrip('/')}/{name}" if is_url(root) else os.path.join(root, name)
