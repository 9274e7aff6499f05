"""Where a streaming dataset's bytes are (`Site`), resolved once, when the dataset is made:

- a local directory: the shards are read in place (no copy, no lock);
- a directory on a network or FUSE file system (NFS, Lustre, sshfs, ...): read in place, the
  chunks a stream is about to read read ahead (`ReadAhead`), or, given a `cache_dir`, its shards
  copied whole into the node's cache (`MountOrigin`), in a directory named after the dataset's
  real path and manifest;
- a URL: the manifest (of the dataset version asked: `options.version`) and the zstd dictionaries
  fetched now into a cache directory named after the URL and that manifest (a rebuilt dataset, or
  another version, gets a fresh one), the index a shard's rows at a time (`IndexRows`), the
  shards whole into the same directory (`UrlOrigin`).

A dataset over adopted shards (`fastpack index`) names where its shards lie (`shard_root`,
`formats.shard_root`): they are read, fetched or copied from there, as the kind of place it is.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from fastpack.formats import MANIFEST_NAME, Manifest, read_dataset_manifest
from fastpack.formats.shard_root import resolve_shard_root
from fastpack.storage import Expected, Location, Transfer, default_cache_dir, is_url
from fastpack.storage.file_system import on_remote_file_system

from ..remote import IndexRows, dictionaries, read_version_manifest
from ..shard_files import IoMethod, resolve_io
from .cache import ShardCache
from .options import StreamingOptions
from .origins import MountOrigin, ShardOrigin, UrlOrigin


@dataclass(frozen=True, kw_only=True)
class Cached:
    """Shards fetched whole from `origin` into the cache directory `root`; `index_rows`: a
    URL's index, fetched a shard's rows at a time (None: read in place)."""

    origin: ShardOrigin
    root: Path
    index_rows: IndexRows | None = None


@dataclass(frozen=True, kw_only=True)
class Site:
    """The dataset at `path` (as given: how messages name it), whose manifest and index are
    read under `root` (a URL's: in its cache directory), its shards read with `io`; `mount`:
    read from a network file system; `cached`: where its shards are fetched from and into (None:
    read in place under `shards`: `root`, or the shard root of adopted shards)."""

    path: str
    root: Path
    manifest: Manifest
    io: IoMethod
    mount: bool
    cached: Cached | None
    shards: Path

    def close(self) -> None:
        """Drop what this process opened of a URL's index."""
        if self.cached is not None and self.cached.index_rows is not None:
            self.cached.index_rows.close()


def locate(path: str | os.PathLike[str], options: StreamingOptions) -> Site:
    """Where the dataset at `path` is, read with `options`: a URL's manifest is fetched now."""
    given = os.fspath(path)
    cached: Cached | None = None
    mount = False
    shards = Path(given)
    if is_url(given):
        location = Location(given, options.storage_options, options.fetch.retry)
        root = Path(options.cache_dir or default_cache_dir())
        root, index_rows = _fetch_metadata(location, root, options)
        # a URL's manifest, of the version asked, is in its cache directory by now
        manifest = read_dataset_manifest(root, None)
        where = resolve_shard_root(given, manifest.shard_root)
        if is_url(where) and where != location.url:
            location = Location(where, options.storage_options, options.fetch.retry)
        cached = Cached(origin=UrlOrigin(location), root=root, index_rows=index_rows)
    else:
        root = Path(given)
        manifest = read_dataset_manifest(root, options.version)
        where = resolve_shard_root(given, manifest.shard_root)
        if is_url(where):  # a local index over shards at a URL: fetched into the cache
            location = Location(where, options.storage_options, options.fetch.retry)
            cache_dir = Path(options.cache_dir or default_cache_dir())
            cache_root = _mount_cache(root, cache_dir, options.cache_limit)
            cached = Cached(origin=UrlOrigin(location), root=cache_root)
        else:
            shards = Path(where)
            mount = on_remote_file_system(shards)
    if mount and options.cache_dir is not None:
        cache_root = _mount_cache(root, Path(options.cache_dir), options.cache_limit)
        cached = Cached(origin=MountOrigin(shards), root=cache_root)
    io = resolve_io(options.io, shards if cached is None else cached.root)
    return Site(
        path=given, root=root, manifest=manifest, io=io, mount=mount, cached=cached, shards=shards
    )


def _fetch_metadata(
    location: Location, cache_dir: Path, options: StreamingOptions
) -> tuple[Path, IndexRows]:
    """Fetch the manifest, (once per cache directory) the zstd dictionaries, and what opening
    the index reads: its rows come shard by shard, before a stream opens the shard
    (`IndexRows`). Returns the dataset's cache directory and its index."""
    retry = options.fetch.retry
    text, manifest = read_version_manifest(location, options.version, retry)
    key = hashlib.sha256(location.url.encode() + b"\n" + text).hexdigest()[:16]
    root = cache_dir / key
    root.mkdir(parents=True, exist_ok=True)
    for d in dictionaries(manifest):
        if not _has_size(root / d.name, d.bytes):
            (root / d.name).parent.mkdir(parents=True, exist_ok=True)
            location.download(
                d.name,
                root / d.name,
                Expected(size=d.bytes, sha256=d.sha256),
                Transfer(retry=retry, threads=options.fetch.part_threads),
            )
    index_rows = IndexRows(location, manifest, root)
    if not (root / MANIFEST_NAME).exists():
        tmp = root / f".{MANIFEST_NAME}.{os.getpid()}.tmp"
        tmp.write_bytes(text)
        os.replace(tmp, root / MANIFEST_NAME)
    ShardCache(root, options.cache_limit).remove_stale_downloads()
    return root, index_rows


def _mount_cache(root: Path, cache_dir: Path, limit: int | None) -> Path:
    """The cache directory of the shards of the mounted dataset at `root`, named after its real
    path and its manifest (a rebuilt dataset gets a fresh one); downloads left by processes
    that ended are removed."""
    text = (root / MANIFEST_NAME).read_bytes()
    where = os.path.realpath(root).encode()
    cache = cache_dir / hashlib.sha256(where + b"\n" + text).hexdigest()[:16]
    cache.mkdir(parents=True, exist_ok=True)
    ShardCache(cache, limit).remove_stale_downloads()
    return cache


def _has_size(path: Path, size: int) -> bool:
    try:
        return path.stat().st_size == size
    except FileNotFoundError:
        return False
