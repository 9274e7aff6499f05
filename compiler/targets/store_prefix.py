"""The build's files at an object store prefix, as the building call and its shard tasks see
them (`StorePrefix`).

A shard is written into a local directory (staging, or a task's scratch directory), then
uploaded: the shard, its `.idx` and its index part, and its shard record last, so that a record
in the store means a whole shard. Records and parts live under `<prefix>/.fastpack-build/` until
the build is done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastpack.formats import SHARDS_DIR, shard_name
from fastpack.formats.layout import SHARD_FORMATS, shard_idx_name
from fastpack.storage import Location, RetryPolicy

from ..build_dir import BUILD_DIR
from ..jobs.index_parts import part_path
from ..jobs.shard_record import (
    ShardRecord,
    parse_record,
    record_path,
    shard_file_name,
)

_FETCH_THREADS = 16


def _name(path_of: Callable[[Path, int], Path], shard: int) -> str:
    """The name, relative to the dataset, of a build file of `shard` (`record_path`, ...)."""
    return path_of(Path(), shard).as_posix()


def shard_files(out: Path, shard: int) -> list[str]:
    """The files of finished shard `shard` in the local directory `out`, relative to it, the
    record last."""
    name = shard_file_name(out, shard)
    if name is None:
        raise FileNotFoundError(f"{out}: shard {shard} has no file")
    return [name, shard_idx_name(shard), _name(part_path, shard), _name(record_path, shard)]


class StorePrefix:
    """An object store prefix, through `Location` (every call retried)."""

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.location = Location(url, storage_options, retry)
        self.url = self.location.url

    def _sizes(self) -> dict[str, int]:
        sizes = dict(self.location.walk(SHARDS_DIR))
        sizes.update(self.location.walk(BUILD_DIR))
        return sizes

    def finished(self, shards: range) -> dict[int, ShardRecord]:
        """The records of the shards in `shards` whose files are all in the store, the shard
        at its recorded size: two listings and one read per record."""
        sizes = self._sizes()
        wanted = {_name(record_path, s): s for s in shards if _name(record_path, s) in sizes}
        with ThreadPoolExecutor(_FETCH_THREADS) as pool:
            records = dict(zip(wanted.values(), pool.map(self._record, wanted), strict=True))
        return {s: r for s, r in records.items() if self._complete(sizes.get, r)}

    def finished_one(self, shard: int) -> ShardRecord | None:
        """Shard `shard`'s record if its files are all in the store: a few requests of one
        object each, where `finished` would list every shard."""
        name = _name(record_path, shard)
        if self.location.size(name) is None:
            return None
        record = self._record(name)
        return record if self._complete(self.location.size, record) else None

    def _record(self, name: str) -> ShardRecord:
        text = self.location.read_bytes(name).decode("utf-8")
        return parse_record(text, self.location.url_of(name), self.url)

    @staticmethod
    def _complete(size_of: Callable[[str], int | None], record: ShardRecord) -> bool:
        shard = record.shard
        whole = any(size_of(shard_name(shard, f)) == record.bytes for f in SHARD_FORMATS)
        others = (shard_idx_name(shard), _name(part_path, shard))
        return whole and all(size_of(name) is not None for name in others)

    def publish(self, out: Path, shard: int) -> None:
        """Upload finished shard `shard` from the local directory `out`, the record last."""
        for name in shard_files(out, shard):
            self.location.upload(out / name, name)

    def fetch_parts(self, staging: Path, shards: range) -> None:
        """Download every shard's index part into `staging`'s build directory."""
        names = [_name(part_path, shard) for shard in shards]

        def fetch(name: str) -> None:
            (staging / name).write_bytes(self.location.read_bytes(name))

        (staging / BUILD_DIR).mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(_FETCH_THREADS) as pool:
            list(pool.map(fetch, names))

    def remove_build_files(self) -> None:
        """Delete the records and parts from the store, once the dataset is published."""
        names = [name for name, _ in self.location.walk(BUILD_DIR)]
        with ThreadPoolExecutor(_FETCH_THREADS) as pool:
            list(pool.map(self.location.remove, names))
