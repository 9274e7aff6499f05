"""A cluster build (Dask, or node shares) whose output is an object store prefix.

The plan stays in a local staging directory (each node's own for node shares); tasks upload
each finished shard with its record last (`targets.UrlTarget`). Once every shard is in the
store, the finishing call fetches the records and index parts, writes the index, rejects and
manifest in staging, and uploads them, the manifest last; then the build files go.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, REJECTS_NAME, manifest_from_text, read_manifest
from fastpack.storage import RetryPolicy, is_url

from ..build import (
    dataset_schema,
    finish_dataset,
    plan_build,
    run_on_cluster,
    run_shards,
    summary_of,
)
from ..build_dir import BUILD_DIR, default_staging_dir
from ..errors import BuildError
from ..jobs.shard_record import save_record
from ..options import BuildOptions, BuildSummary
from ..output.out_dir import OPTIONS_NAME, check_out_dir, check_same
from ..planning.plan_store import PlanMeta
from ..sources.detect import detect_kind, source_id
from .node_share import node_plan_dir, node_shards, share_note, share_summary
from .targets import UrlTarget

_UPLOAD_THREADS = 4


def _check_options(target: UrlTarget, fingerprint: Mapping[str, Any], staging: Path) -> None:
    """Record the build's options in the store, or check them against those recorded there
    (by another node, or before an interruption)."""
    name = f"{BUILD_DIR}/{OPTIONS_NAME}"
    if target.location.size(name) is None:
        local = staging / name
        target.location.upload(local, name)
        return
    stored = json.loads(target.location.read_bytes(name))
    check_same(target.url, "the build there", stored, fingerprint)


def _check_reachable(meta: PlanMeta, local: Path) -> None:
    """Refuse a source whose scan copied or spilled data into the client's staging directory
    (remote webdataset or TFRecord files, Parquet, COCO): workers on other machines cannot
    read it there."""
    if is_url(meta.root):
        return
    staging = local.resolve()
    for name in meta.containers:
        if Path(meta.root, name).resolve().is_relative_to(staging):
            raise BuildError(
                f"{staging}: this source's scan keeps data in the staging directory "
                f"({name}), which the cluster's workers cannot read; give --staging (staging=) "
                "a directory on a file system every worker mounts at the same path"
            )


def _summary_from_store(target: UrlTarget, seconds: float) -> BuildSummary:
    text = target.location.read_bytes(MANIFEST_NAME)
    manifest = manifest_from_text(text, target.location.url_of(MANIFEST_NAME))
    stats = manifest.stats
    return BuildSummary(
        inputs=stats["inputs"], samples=manifest.num_samples, shards=len(manifest.shards),
        bytes=sum(s.bytes for s in manifest.shards), rejected=stats["rejected"],
        converted=stats["converted"], seconds=seconds,
    )  # fmt: skip


def _publish_local_shards(target: UrlTarget, staging: Path, shards: list[int]) -> None:
    def publish(shard: int) -> None:
        target.publish(staging, shard)

    with ThreadPoolExecutor(_UPLOAD_THREADS) as pool:
        list(pool.map(publish, shards))


def _publish_dataset(target: UrlTarget, staging: Path) -> None:
    """The dataset's own files from staging (its shards are in the store), the manifest last."""
    manifest = read_manifest(staging / MANIFEST_NAME)
    names = [
        spec.zstd.dictionary.name
        for spec in manifest.schema.fields
        if spec.zstd is not None and spec.zstd.dictionary is not None
    ]
    names.append(manifest.index.name)
    if (staging / REJECTS_NAME).exists():
        names.append(REJECTS_NAME)
    for name in [*names, MANIFEST_NAME]:
        target.location.upload(staging / name, name)


def build_to_store(
    source: str,
    url: str,
    options: BuildOptions,
    *,
    cluster: Any,
    staging: Path | None,
    storage_options: Mapping[str, Any] | None,
    keep_staging: bool,
    retry: RetryPolicy | None,
) -> BuildSummary:
    """Build `source` into the prefix `url` on a Dask `cluster`, or as this node's share."""
    started = time.perf_counter()
    target = UrlTarget(url, storage_options, retry)
    if target.location.size(MANIFEST_NAME) is not None:
        if not options.resume:
            raise BuildError(
                f"{target.url}: already holds a fastpack dataset; pass --resume (resume=True) "
                "to keep it, or choose another prefix"
            )
        return _summary_from_store(target, time.perf_counter() - started)
    kind = detect_kind(source, options.source_format)
    fingerprint = {"source": source_id(source), "source_kind": kind, **options.shaping()}
    share = options.node_share
    if cluster is not None and share:
        raise BuildError("a build on a cluster takes no node share (num_nodes, node_rank)")
    if cluster is not None:
        from .dask_runner import check_cluster  # noqa: PLC0415 - an optional extra

        check_cluster(cluster)
    if share:
        local = node_plan_dir(target.url, options, staging)
    else:
        local = staging if staging is not None else default_staging_dir(target.url)
    state = check_out_dir(local, resume=True, fingerprint=fingerprint)
    meta = plan_build(source, local, kind=kind, state=state, options=options,
                      fingerprint=fingerprint)  # fmt: skip
    _check_options(target, fingerprint, local)
    plan_dir = local / BUILD_DIR
    schema, schema_notes = dataset_schema(local, plan_dir, meta, options)
    every = range(meta.num_shards)
    finished = target.finished(every)
    notes: tuple[str, ...] = ()
    if cluster is not None:
        _check_reachable(meta, local)
        notes = run_on_cluster(plan_dir, meta=meta, options=options, schema=schema,
                               cluster=cluster, target=target.url, finished=finished,
                               storage_options=storage_options)  # fmt: skip
    else:
        todo = [s for s in node_shards(meta.num_shards, options) if s not in finished]
        run_shards(local, plan_dir, meta=meta, options=options, schema=schema, shards=todo)
        _publish_local_shards(target, local, todo)
    finished = target.finished(every)
    if len(finished) < meta.num_shards or (share and not options.resume):
        shutil.rmtree(local)  # this call's shards are in the store: its plan is not needed
        note = share_note(options, len(finished), meta.num_shards, target.url)
        records = [finished[s] for s in node_shards(meta.num_shards, options) if s in finished]
        return share_summary(records, time.perf_counter() - started, note)
    for record in finished.values():  # read already by `finished`: saved, not fetched again
        save_record(local, record)
    target.fetch_parts(local, every)
    finish_dataset(local, meta, options=options, schema=schema, notes=schema_notes, kind=kind)
    _publish_dataset(target, local)
    target.remove_build_files()
    summary = summary_of(local, time.perf_counter() - started)
    if not keep_staging:
        shutil.rmtree(local)
    return dataclasses.replace(summary, notes=notes)
