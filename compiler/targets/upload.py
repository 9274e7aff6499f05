"""The `Publisher` of a dataset assembled in local staging for an object store prefix: each
shard uploaded as soon as the local run finishes it (its record last), then, after the finish,
the dataset's own files (the manifest last), and the build files removed from the store."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from ..finish import dataset_files
from ..jobs.shard_record import ShardRecord, finished_record, save_record
from .store_prefix import StorePrefix

_UPLOAD_THREADS = 4
POLL_SECONDS = 0.5


class StagedUpload:
    """Publishes the staging directory `local` at `prefix`."""

    def __init__(self, prefix: StorePrefix, local: Path) -> None:
        self.prefix, self.local = prefix, local

    @contextmanager
    def publishing(self, shards: Sequence[int]) -> Iterator[None]:
        """Upload each of `shards` as soon as the local run has finished it; after the run
        (also after a failure: a resume has less to do) upload the rest that are finished."""
        watcher = _Watcher(self.prefix, self.local, shards)
        watcher.start()
        try:
            yield
        finally:
            watcher.stop.set()
            watcher.join()
            if watcher.error is None:
                watcher.publish_ready(_UPLOAD_THREADS)
        if watcher.error is not None:
            raise watcher.error

    def gather(self, finished: Mapping[int, ShardRecord], shards: range) -> None:
        """Bring every shard's record and index part into staging, for the finish."""
        for record in finished.values():  # read already by `finished`: saved, not fetched
            save_record(self.local, record)
        self.prefix.fetch_parts(self.local, shards)

    def publish(self) -> None:
        """Upload the dataset's own files (its shards are in the store), the manifest last;
        then the build files go from the store."""
        for name in dataset_files(self.local, shards=False):
            self.prefix.location.upload(self.local / name, name)
        self.prefix.remove_build_files()


class _Watcher(threading.Thread):
    """Uploads shards while the local run goes on; an upload error stops it and is raised
    after the run."""

    def __init__(self, prefix: StorePrefix, local: Path, shards: Sequence[int]) -> None:
        super().__init__(name="fastpack-upload", daemon=True)
        self.prefix, self.local = prefix, local
        self.pending = set(shards)
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def _ready(self) -> list[int]:
        return [s for s in sorted(self.pending) if finished_record(self.local, s) is not None]

    def publish_ready(self, threads: int = 1) -> None:
        """Upload every pending shard that the local run has finished, the record last."""
        ready = self._ready()

        def publish(shard: int) -> None:
            self.prefix.publish(self.local, shard)

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(publish, ready))
        self.pending.difference_update(ready)

    def run(self) -> None:
        try:
            while not self.stop.wait(POLL_SECONDS):
                self.publish_ready()
        except BaseException as e:  # raised by `publishing` once the run is over
            self.error = e
