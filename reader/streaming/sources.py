"""Where a stream's shards come from: in place on a local (or NFS) file system, or fetched whole
from a URL into the node's shard cache by background threads, ahead of need."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fastpack.formats import MANIFEST_NAME, DatasetNotFoundError, Manifest
from fastpack.storage import Location, RetryPolicy

from ..shard_files import IoMethod, ShardFile, listed_in, open_shard
from .cache import ShardCache

_EVICTED_RETRIES = 3  # a shard evicted by another stream between download and open


class ShardSource(Protocol):
    """Opens the shards of one stream; `position` counts the stream's chunks from the start."""

    def get(self, position: int) -> ShardFile: ...

    def release(self, position: int) -> None: ...

    def close(self) -> None: ...


class LocalShards:
    """Shards read in place (no copy, no lock), opened when needed."""

    def __init__(self, root: Path, manifest: Manifest, shards: Sequence[int], io: IoMethod) -> None:
        self._root, self._manifest, self._shards, self._io = root, manifest, shards, io
        self._open: dict[int, ShardFile] = {}

    def get(self, position: int) -> ShardFile:
        if position not in self._open:
            shard = self._shards[position]
            info = self._manifest.shards[shard]
            what = listed_in(shard, self._root / MANIFEST_NAME)
            self._open[position] = open_shard(self._root / info.name, info.bytes, self._io, what)
        return self._open[position]

    def release(self, position: int) -> None:
        opened = self._open.pop(position, None)
        if opened is not None:
            opened.close()

    def close(self) -> None:
        for position in list(self._open):
            self.release(position)


@dataclass(frozen=True, kw_only=True)
class FetchOptions:
    """How shards are fetched: `threads` shards at once, each in ranged GETs of `part_bytes`
    over `part_threads` connections, retried by `retry`."""

    threads: int = 2
    part_threads: int = 4
    part_bytes: int = 32 * 2**20
    retry: RetryPolicy = field(default_factory=RetryPolicy)


class RemoteShards:
    """Shards fetched whole into `cache`, `ahead` chunk positions in advance of the reader."""

    def __init__(
        self,
        location: Location,
        manifest: Manifest,
        cache: ShardCache,
        shards: Sequence[int],
        *,
        ahead: int,
        io: IoMethod,
        options: FetchOptions,
    ) -> None:
        self._location, self._manifest, self._cache = location, manifest, cache
        self._shards, self._ahead, self._io, self._options = shards, ahead, io, options
        self._pool = ThreadPoolExecutor(max(1, options.threads), thread_name_prefix="fastpack")
        self._futures: dict[int, Future[ShardFile]] = {}
        self._submitted = 0
        self._lock = threading.Lock()

    def get(self, position: int) -> ShardFile:
        self._submit_until(min(len(self._shards), position + 1 + self._ahead))
        return self._futures[position].result()

    def _submit_until(self, stop: int) -> None:
        with self._lock:
            while self._submitted < stop:
                shard = self._shards[self._submitted]
                self._futures[self._submitted] = self._pool.submit(self._load, shard)
                self._submitted += 1

    def _needed(self) -> list[str]:
        """Names of the shards this stream holds or fetches (never evicted by it)."""
        with self._lock:
            positions = list(self._futures)
        return [self._manifest.shards[self._shards[p]].name for p in positions]

    def _load(self, shard: int) -> ShardFile:
        info = self._manifest.shards[shard]
        for _ in range(_EVICTED_RETRIES):
            path = self._cache.lookup(info.name, info.bytes)
            if path is None:
                path = self._fetch(shard)
            try:
                what = listed_in(shard, self._location.url_of(MANIFEST_NAME))
                return open_shard(path, info.bytes, self._io, f"{what}, cached")
            except FileNotFoundError:
                continue
        raise DatasetNotFoundError(
            f"{self._cache.path(info.name)}: evicted by other streams {_EVICTED_RETRIES} times "
            "between download and open; raise cache_limit"
        )

    def _fetch(self, shard: int) -> Path:
        info, options = self._manifest.shards[shard], self._options
        tmp = self._cache.reserve(info.name, info.bytes, self._needed())
        dest = self._cache.path(info.name)
        self._location.download(
            info.name, dest, size=info.bytes, sha256=info.sha256, retry=options.retry,
            part_bytes=options.part_bytes, threads=options.part_threads, tmp=tmp,
        )  # fmt: skip
        return dest

    def release(self, position: int) -> None:
        with self._lock:
            future = self._futures.pop(position, None)
        if future is not None and future.done() and future.exception() is None:
            future.result().close()

    def close(self) -> None:
        with self._lock:
            futures = list(self._futures.values())
            self._futures.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)  # a download in flight finishes
        for future in futures:
            if future.done() and not future.cancelled() and future.exception() is None:
                future.result().close()
