"""Where a stream's shards come from: in place on a local or network file system (whose chunks
are read ahead, whole and in order, by `ReadAhead`), or fetched whole into the node's shard cache
by background threads, ahead of need, from a URL or from a mounted file system (`origins`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fastpack.formats import MANIFEST_NAME, DatasetNotFoundError, Manifest
from fastpack.storage import FetchError

from ..errors import ShardUnavailableError
from ..shard_files import IoMethod, ShardFile, listed_in, open_shard
from ..stats import block, recorder
from ..stats.counts import READ_COUNTS
from .cache import ShardCache
from .options import FetchOptions
from .prefetch import PrefetchDepth
from .readahead import ReadAhead

if TYPE_CHECKING:
    from .origins import ShardOrigin

__all__ = ["FetchOptions", "LocalShards", "RemoteShards", "ShardSource"]  # FetchOptions: as before

_EVICTED_RETRIES = 3  # a shard evicted by another stream between download and open


class ShardSource(Protocol):
    """Opens the shards of one stream; `position` counts the stream's chunks from the start."""

    def get(self, position: int) -> ShardFile: ...

    def release(self, position: int) -> None: ...

    def close(self) -> None: ...


class LocalShards:
    """Shards read in place (no copy, no lock), opened when needed. With `readahead` (on a
    network file system) the chunks from a position being opened to `readahead.depth` positions
    past it are opened too and read ahead, in order, into the page cache."""

    def __init__(
        self,
        root: Path,
        manifest: Manifest,
        shards: Sequence[int],
        io: IoMethod,
        readahead: ReadAhead | None = None,
    ) -> None:
        self._root, self._manifest, self._shards, self._io = root, manifest, shards, io
        self._readahead = readahead
        self._open: dict[int, ShardFile] = {}

    def _opened(self, position: int) -> ShardFile:
        if position not in self._open:
            shard = self._shards[position]
            info = self._manifest.shards[shard]
            what = listed_in(shard, self._root / MANIFEST_NAME)
            self._open[position] = open_shard(self._root / info.name, info.bytes, self._io, what)
        return self._open[position]

    def get(self, position: int) -> ShardFile:
        start = time.perf_counter_ns()
        opened = self._opened(position)
        if self._readahead is not None:
            stop = min(len(self._shards), position + self._readahead.depth)
            for ahead in range(position, stop):
                self._readahead.start(ahead, self._opened(ahead))
        recorder.current().timed(block.READ_NS, time.perf_counter_ns() - start)
        return opened

    def release(self, position: int) -> None:
        if self._readahead is not None:
            self._readahead.cancel(position)
        opened = self._open.pop(position, None)
        if opened is not None:
            opened.close()

    def close(self) -> None:
        if self._readahead is not None:
            self._readahead.close()
        for position in list(self._open):
            self.release(position)


class RemoteShards:
    """Shards fetched whole from `origin` (a URL, a mounted file system) into `cache`,
    `depth.depth` chunk positions in advance of the reader; `keep` names shards this stream
    never evicts (the node's resident shards)."""

    def __init__(  # noqa: PLR0913 -- keyword inputs: after the four parts a source joins
        self,
        origin: ShardOrigin,
        manifest: Manifest,
        cache: ShardCache,
        shards: Sequence[int],
        *,
        depth: PrefetchDepth,
        io: IoMethod,
        options: FetchOptions,
        before_open: Callable[[int], None] | None = None,
        keep: Collection[str] = (),
    ) -> None:
        self._origin, self._manifest, self._cache = origin, manifest, cache
        self._before_open = before_open or (lambda shard: None)  # e.g. fetch its index rows
        self._shards, self._depth, self._io, self._options = shards, depth, io, options
        self._keep = list(keep)
        threads = options.threads or depth.limit + depth.window
        self._pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="fastpack")
        self._futures: dict[int, Future[ShardFile]] = {}
        self._submitted = 0
        self._lock = threading.Lock()

    def get(self, position: int) -> ShardFile:
        start = time.perf_counter_ns()
        self._depth.asking(position)
        if self._submitted == 0:  # the stream's first shard comes alone, sooner
            self._submit_until(min(len(self._shards), position + 1))
            self._futures[position].exception()  # waits; an error is raised below
        self._submit_until(min(len(self._shards), position + 1 + self._depth.depth))
        shard_file = self._futures[position].result()
        self._depth.received()
        recorder.current().timed(block.READ_NS, time.perf_counter_ns() - start)
        return shard_file

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
        return [self._manifest.shards[self._shards[p]].name for p in positions] + self._keep

    def _load(self, shard: int) -> ShardFile:
        info = self._manifest.shards[shard]
        for _ in range(_EVICTED_RETRIES):
            path = self._cache.lookup(info.name, info.bytes)
            if path is None:
                start = time.perf_counter()
                path = self._fetch(shard)
                self._depth.downloaded(time.perf_counter() - start)
            else:
                READ_COUNTS.cache_hit()
            self._before_open(shard)
            try:
                what = self._origin.describe(shard)
                return open_shard(path, info.bytes, self._io, f"{what}, cached")
            except FileNotFoundError:
                continue
        raise DatasetNotFoundError(
            f"{self._cache.path(info.name)}: evicted by other streams {_EVICTED_RETRIES} times "
            "between download and open; raise cache_limit"
        )

    def _fetch(self, shard: int) -> Path:
        info = self._manifest.shards[shard]
        tmp = self._cache.reserve(info.name, info.bytes, self._needed())
        dest = self._cache.path(info.name)
        try:
            self._origin.fetch(info, dest, tmp, self._options)
        except FetchError as e:
            raise ShardUnavailableError(f"{self._origin.describe(shard)}: {e}") from e
        finally:
            tmp.unlink(missing_ok=True)  # a failed fetch leaves nothing behind
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
