"""Building to a URL (`s3://bucket/prefix`, or any fsspec URL): the build runs in a local staging
directory, each shard is uploaded as soon as it is finished, and the manifest goes up last, so
that a half-built dataset is never visible as a dataset. `resume` resumes the local build and
skips the objects already uploaded with the right size (an upload appears whole or not at all).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import (
    MANIFEST_NAME,
    REJECTS_NAME,
    read_manifest,
    shard_idx_name,
)
from fastpack.storage import Location, RetryPolicy

from .build import DEFAULT_OPTIONS, build
from .build_dir import BUILD_DIR, default_staging_dir
from .errors import BuildError
from .jobs.shard_record import finished_record, shard_file_name
from .options import BuildOptions, BuildSummary

POLL_SECONDS = 0.5
_RECORD_SUFFIX = ".shard.json"


class Uploader:
    """Puts the files of a local dataset directory at a URL prefix, each one once; every call
    to the object store is retried through `retry` (see `Location`)."""

    def __init__(
        self,
        local: Path,
        url: str,
        storage_options: Mapping[str, Any] | None,
        *,
        resume: bool,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.local = local
        self.location = Location(url, storage_options, retry)
        self.url = self.location.url
        self._resume = resume
        self._done: set[str] = set()

    def check_target(self) -> None:
        """Refuse a prefix that already holds a dataset, unless resuming."""
        if self.location.size(MANIFEST_NAME) is not None and not self._resume:
            raise BuildError(
                f"{self.url}: already holds a fastpack dataset; pass --resume (resume=True) "
                "to finish or keep it, or choose another prefix"
            )

    def put(self, name: str) -> None:
        """Upload `name` (relative to the dataset), unless already done (or, when resuming,
        already there with the same size)."""
        if name in self._done:
            return
        local = self.local / name
        if not (self._resume and self.location.size(name) == local.stat().st_size):
            self.location.upload(local, name)
        self._done.add(name)

    def put_finished_shards(self) -> None:
        """Upload every shard (tar and DALI index) that the running build has finished."""
        build_dir = self.local / BUILD_DIR
        try:
            names = sorted(p.name for p in build_dir.iterdir() if p.name.endswith(_RECORD_SUFFIX))
        except FileNotFoundError:
            return
        for record_name in names:
            shard = int(record_name[: -len(_RECORD_SUFFIX)])
            name = shard_file_name(self.local, shard)
            if name is None or name in self._done or finished_record(self.local, shard) is None:
                continue
            self.put(shard_idx_name(shard))
            self.put(name)

    def put_dataset(self) -> None:
        """Upload what is left of the finished local dataset, the manifest last."""
        manifest = read_manifest(self.local / MANIFEST_NAME)
        for shard in manifest.shards:
            self.put(shard.index_name)
            self.put(shard.name)
        for spec in manifest.schema.fields:
            if spec.zstd is not None and spec.zstd.dictionary is not None:
                self.put(spec.zstd.dictionary.name)
        self.put(manifest.index.name)
        if (self.local / REJECTS_NAME).exists():
            self.put(REJECTS_NAME)
        self.put(MANIFEST_NAME)


class _Watcher(threading.Thread):
    """Uploads shards while the build runs; an upload error stops it and is raised after."""

    def __init__(self, uploader: Uploader) -> None:
        super().__init__(name="fastpack-upload", daemon=True)
        self.uploader = uploader
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.wait(POLL_SECONDS):
                self.uploader.put_finished_shards()
        except BaseException as e:
            self.error = e


def build_to_url(
    source: str | os.PathLike[str],
    url: str,
    options: BuildOptions = DEFAULT_OPTIONS,
    *,
    staging: str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    keep_staging: bool = False,
    retry: RetryPolicy | None = None,
    cluster: Any = None,
) -> BuildSummary:
    """Build `source` into the local directory `staging` and publish it at `url`.

    `staging` (default `default_staging_dir(url)`) holds the build and its resume state: a
    resume needs the same one. Once the dataset is published it is deleted, unless
    `keep_staging` (it is then a local copy of the dataset). With `cluster` (a Dask
    scheduler address or `distributed.Client`) or `options.num_nodes > 1`, the shard jobs run
    on the cluster, or this node's share of them, and upload their shards themselves. Every
    upload and every look at the target goes through `retry` (default `RetryPolicy()`), as
    downloads do: a transport error is retried with backoff, and after the last attempt
    `fastpack.storage.FetchError` names the object."""
    if cluster is not None or options.num_nodes > 1:
        from .cluster.remote_build import build_to_store  # noqa: PLC0415

        return build_to_store(
            os.fspath(source), url, options, cluster=cluster,
            staging=Path(staging) if staging is not None else None,
            storage_options=storage_options, keep_staging=keep_staging, retry=retry,
        )  # fmt: skip
    staging = Path(staging) if staging is not None else default_staging_dir(url)
    uploader = Uploader(staging, url, storage_options, resume=options.resume, retry=retry)
    uploader.check_target()
    watcher = _Watcher(uploader)
    watcher.start()
    try:
        summary = build(source, staging, options)
    finally:
        watcher.stop.set()
        watcher.join()
        if watcher.error is None:
            uploader.put_finished_shards()  # also after a failure: a resume has less to do
    if watcher.error is not None:
        raise watcher.error
    uploader.put_dataset()
    if not keep_staging:
        shutil.rmtree(staging)
    return summary
