"""A target that is an object store prefix (`s3://...`, any fsspec URL): the plan and the finish
happen in a local staging directory, and a `StagedUpload` publishes from there, each shard with
its record last and the finished dataset's own files after them, the manifest last, so that a
half-built dataset is never visible as one. Every call to the store goes through `retry`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME
from fastpack.formats.manifest import manifest_from_text
from fastpack.storage import RetryPolicy

from ..build_dir import BUILD_DIR, default_staging_dir, node_plan_dir
from ..errors import BuildError
from ..jobs.shard_record import ShardRecord
from ..options import BuildOptions, BuildSummary
from .out_dir import OPTIONS_NAME, OutState, check_out_dir, check_same
from .store_prefix import StorePrefix
from .target import Publisher
from .upload import StagedUpload


class StoreTarget:
    """An object store prefix, built through a local staging directory, which is deleted once
    this call is done with it, unless `keep_staging`."""

    def __init__(  # noqa: PLR0913 -- keyword inputs
        self,
        url: str,
        options: BuildOptions,
        *,
        staging: Path | None,
        storage_options: Mapping[str, Any] | None,
        retry: RetryPolicy | None,
        keep_staging: bool,
    ) -> None:
        self.prefix = StorePrefix(url, storage_options, retry)
        self._resume, self._keep = options.resume, keep_staging
        self.name = self.prefix.url
        if options.node_share:
            local = node_plan_dir(self.prefix.url, options.node_rank, staging)
        else:
            local = staging if staging is not None else default_staging_dir(self.prefix.url)
        self.plan_root = self.out_root = local
        self.task_target = self.prefix.url
        self.storage_options: Mapping[str, Any] = dict(storage_options or {})
        self.publisher: Publisher | None = StagedUpload(self.prefix, local)

    def prepare(self, fingerprint: Mapping[str, Any]) -> OutState:
        """COMPLETE when the prefix holds a dataset (refused unless resuming), else the state
        of the staging directory, which a later call resumes."""
        if self.prefix.location.size(MANIFEST_NAME) is not None:
            if not self._resume:
                raise BuildError(
                    f"{self.name}: already holds a fastpack dataset; pass --resume "
                    "(resume=True) to finish or keep it, or choose another prefix"
                )
            return OutState.COMPLETE
        return check_out_dir(self.out_root, resume=True, fingerprint=fingerprint)

    def summary(self, seconds: float) -> BuildSummary:
        """The summary of the dataset already in the store."""
        location = self.prefix.location
        text = location.read_bytes(MANIFEST_NAME)
        return BuildSummary.of_manifest(
            manifest_from_text(text, location.url_of(MANIFEST_NAME)), seconds
        )

    def planned(self, fingerprint: Mapping[str, Any]) -> None:
        """Record the build's options in the store, or check them against those recorded
        there (by another node, or before an interruption)."""
        name = f"{BUILD_DIR}/{OPTIONS_NAME}"
        location = self.prefix.location
        if location.size(name) is None:
            location.upload(self.out_root / name, name)
            return
        stored = json.loads(location.read_bytes(name))
        check_same(self.name, "the build there", stored, fingerprint)

    def finished(self, shards: range) -> dict[int, ShardRecord]:
        return self.prefix.finished(shards)

    def drop_plan(self) -> None:
        """Delete staging: this call's shards, or the whole dataset, are in the store."""
        if not self._keep:
            shutil.rmtree(self.out_root)
