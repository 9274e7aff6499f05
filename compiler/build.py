"""`build()`: source -> plan -> shard jobs -> index, rejects, manifest (last), for every target
(a directory, or an object store through a local staging directory) and every runner (local
processes, a node's share, a Dask cluster), which are chosen once, at the top."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.storage import RetryPolicy

from .build_dir import BUILD_DIR
from .finish import finish_dataset
from .options import BuildOptions, BuildSummary
from .runners.choose import choose_runner
from .runners.node_share import node_shards, share_note, share_summary
from .runners.run import Run
from .sources.detect import detect_kind, source_id
from .stages import dataset_schema, plan_build
from .targets.choose import choose_target
from .targets.out_dir import OutState

DEFAULT_OPTIONS = BuildOptions()


def build(  # noqa: PLR0913 -- public signature
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: BuildOptions = DEFAULT_OPTIONS,
    *,
    cluster: Any = None,
    staging: str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    keep_staging: bool = False,
    retry: RetryPolicy | None = None,
) -> BuildSummary:
    """Compile `source` (ImageFolder tree, list file, webdataset tars or URLs, ...) into `out`,
    a directory or a URL (`s3://bucket/prefix`, any fsspec URL).

    Output bytes depend only on the source and the output-shaping options, never on `workers`,
    the cluster, the nodes or the target. `cluster` (a Dask scheduler address or
    `distributed.Client`) runs the shard jobs as tasks on its workers, which must see the
    source (and a directory `out`) at the same paths. With `options.num_nodes > 1`, this call
    builds node `options.node_rank`'s share of the shards only, planning in `staging`
    (default: under the cache directory); a later call with `resume` (and no node share)
    writes the index and manifest.

    For a URL, the build runs in the local directory `staging` (default
    `default_staging_dir(url)`), which holds its resume state; each shard is uploaded once
    finished, and the manifest last. Staging is deleted once the dataset is published, unless
    `keep_staging`. Every call to the store goes through `retry` (default `RetryPolicy()`);
    after its last attempt `fastpack.storage.FetchError` names the object.

    Raises SourceError for a bad source, BuildError when `out` is not usable, for a reject
    with `strict`, and for a `resume` whose options differ from the interrupted build's."""
    started = time.perf_counter()
    source = os.fspath(source)  # a source may be a URL: no Path of it
    kind = detect_kind(source, options.source_format)
    target = choose_target(
        os.fspath(out),
        source,
        options,
        staging=Path(staging) if staging is not None else None,
        storage_options=storage_options,
        retry=retry,
        keep_staging=keep_staging,
    )
    runner = choose_runner(cluster, options)
    fingerprint = {"source": source_id(source), "source_kind": kind, **options.shaping()}
    state = target.prepare(fingerprint)
    if state is OutState.COMPLETE:
        return target.summary(time.perf_counter() - started)
    runner.check()
    meta = plan_build(
        source, target.plan_root, kind=kind, state=state, options=options, fingerprint=fingerprint
    )
    target.planned(fingerprint)
    plan_dir = target.plan_root / BUILD_DIR
    schema, schema_notes = dataset_schema(target.out_root, plan_dir, meta, options)
    every = range(meta.num_shards)
    run = Run(
        plan_dir=plan_dir,
        meta=meta,
        options=options,
        schema=schema,
        target=target,
        finished=target.finished(every),
    )
    notes = runner.run(run)
    finished = target.finished(every)
    if len(finished) < meta.num_shards or (options.node_share and not options.resume):
        target.drop_plan()
        note = share_note(options, len(finished), meta.num_shards, target.name)
        shards = node_shards(meta.num_shards, options)
        records = [finished[s] for s in shards if s in finished]
        return share_summary(records, time.perf_counter() - started, note)
    publisher = target.publisher
    if publisher is not None:
        publisher.gather(finished, every)
    manifest, kept = finish_dataset(
        target.out_root, meta, options=options, schema=schema, notes=schema_notes, kind=kind
    )
    summary = BuildSummary.of_manifest(manifest, time.perf_counter() - started)
    if publisher is not None:
        publisher.publish()
    target.drop_plan()
    return dataclasses.replace(summary, notes=notes, kept=kept)
