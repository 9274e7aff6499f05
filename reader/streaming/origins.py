"""Where a stream fetches whole shards from into the node's cache: an object store's URL
(`UrlOrigin`, ranged GETs checked against the manifest's SHA-256) or a mounted network file
system (`MountOrigin`, large sequential reads of several parts at once, checked for size)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from fastpack.formats import MANIFEST_NAME, ShardInfo
from fastpack.storage import Expected, Location, Transfer
from fastpack.storage.copy import copy_file

from ..shard_files import listed_in
from .options import FetchOptions


class ShardOrigin(Protocol):
    """Fetches a shard whole into the cache."""

    def describe(self, shard: int) -> str:
        """How errors name shard `shard`."""
        ...

    def fetch(self, info: ShardInfo, dest: Path, tmp: Path, options: FetchOptions) -> None:
        """Put the shard `info` at `dest`, building it in `tmp` (a file of its full size)."""
        ...


class UrlOrigin:
    """Shards of the dataset at `location`, downloaded."""

    def __init__(self, location: Location) -> None:
        self.location = location

    def describe(self, shard: int) -> str:
        return listed_in(shard, self.location.url_of(MANIFEST_NAME))

    def fetch(self, info: ShardInfo, dest: Path, tmp: Path, options: FetchOptions) -> None:
        self.location.download(
            info.name,
            dest,
            Expected(size=info.bytes, sha256=info.sha256, crc32c=info.crc32c),
            Transfer(
                retry=options.retry,
                part_bytes=options.part_bytes,
                threads=options.part_threads,
                bulk=True,
            ),
            tmp=tmp,
        )


class MountOrigin:
    """Shards of the dataset at `root` on a mounted file system, copied to local disk."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self, shard: int) -> str:
        return listed_in(shard, self.root / MANIFEST_NAME)

    def fetch(self, info: ShardInfo, dest: Path, tmp: Path, options: FetchOptions) -> None:
        copy_file(
            self.root / info.name,
            dest,
            size=info.bytes,
            transfer=Transfer(
                retry=options.retry, part_bytes=options.part_bytes, threads=options.part_threads
            ),
            tmp=tmp,
        )
