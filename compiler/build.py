"""`build()`: source -> plan -> shard jobs in parallel -> index, rejects, manifest."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, SHARDS_DIR, Schema, read_manifest
from fastpack.storage import is_url

from .build_dir import BUILD_DIR
from .cluster.node_share import node_plan_dir, node_shards, share_note, share_summary
from .cluster.targets import DirectoryTarget
from .cluster.worker_report import worker_lines
from .errors import BuildError
from .jobs.dictionaries import load_dictionaries, train_dictionaries, with_dictionaries
from .jobs.progress import BuildProgress
from .jobs.runner import run_jobs
from .jobs.shard_job import ShardJob
from .jobs.shard_record import ShardRecord, finished_record, load_record
from .options import BuildOptions, BuildSummary
from .output.assemble import write_dataset_manifest
from .output.out_dir import OutState, check_out_dir, start_build_dir
from .planning.make_plan import make_plan
from .planning.plan_store import Plan, PlanMeta, read_meta
from .sources.detect import detect_kind, source_id

DEFAULT_OPTIONS = BuildOptions()


def _check_apart(source: Path, out: Path) -> None:
    source, out = source.resolve(), out.resolve()
    if out == source or (source.is_dir() and out.is_relative_to(source)):
        raise BuildError(f"{out}: the output directory must not be inside the source {source}")


def plan_build(
    source: str, out: Path, *, kind: str, state: OutState, options: BuildOptions,
    fingerprint: dict[str, Any],
) -> PlanMeta:  # fmt: skip
    """The interrupted build's plan when resuming one that finished planning, else a new plan."""
    meta = read_meta(out / BUILD_DIR) if state is OutState.RESUME else None
    if meta is None:
        build_dir = start_build_dir(out, fingerprint)
        meta = make_plan(
            source,
            kind,
            build_dir,
            shard_size=options.shard_size,
            shuffle_seed=options.shuffle_seed,
            options=options.source_options(),
        )
    return meta


def dataset_schema(
    out: Path, plan_dir: Path, meta: PlanMeta, options: BuildOptions
) -> tuple[Schema, dict[str, Any]]:
    """The dataset's schema, with the dictionaries trained for it (written into `out`), and what
    the manifest's `build` says of those dictionaries."""
    schema = meta.field_schema()
    if not meta.train:
        return schema, {}
    trained = train_dictionaries(out, Plan(plan_dir), options.dictionary_size)
    notes = {
        name: "trained" if d is not None else "too few samples to train: frames without one"
        for name, d in trained.items()
    }
    return with_dictionaries(schema, trained), {"dictionaries": notes}


def shard_job(out: Path, shard: int, options: BuildOptions, schema: Schema) -> ShardJob:
    """The job of shard `shard`, writing into `out`."""
    return ShardJob(
        out=str(out), shard=shard, max_side=options.max_side, quality=options.quality,
        check=options.check, strict=options.strict, schema=None if schema.is_v1 else schema,
        shard_format=options.shard_format, baseline=options.baseline,
    )  # fmt: skip


def run_shards(
    out: Path, plan_dir: Path, *, meta: PlanMeta, options: BuildOptions, schema: Schema,
    shards: Sequence[int],
) -> None:  # fmt: skip
    """Run the job of every shard in `shards` that is not finished in `out`."""
    (out / SHARDS_DIR).mkdir(exist_ok=True)
    todo, done = [], 0
    for shard in shards:
        record = finished_record(out, shard)
        if record is None:
            todo.append(shard_job(out, shard, options, schema))
        else:
            done += record.planned
    total = sum(stop - start for start, stop in map(meta.shard_range, shards))
    workers = options.workers or os.cpu_count() or 1
    with BuildProgress(total, done, enabled=options.progress) as progress:
        run_jobs(todo, plan_dir, workers, progress)


def run_on_cluster(
    plan_dir: Path, *, meta: PlanMeta, options: BuildOptions, schema: Schema, cluster: Any,
    target: str, finished: Mapping[int, ShardRecord],
    storage_options: Mapping[str, Any] | None = None,
) -> tuple[str, ...]:  # fmt: skip
    """Run the jobs of the shards not `finished` as tasks on a Dask cluster, writing to
    `target` (a shared directory or a URL); the per-worker lines of the summary."""
    from .cluster.dask_runner import run_on_dask  # noqa: PLC0415 - an optional extra
    from .cluster.shard_task import ShardTask  # noqa: PLC0415
    from .planning.plan_slice import slice_shard  # noqa: PLC0415

    plan = Plan(plan_dir)
    out = plan_dir.parent
    dictionaries = load_dictionaries(out, schema) if not schema.is_v1 else None
    job_out = out if is_url(target) else Path(target)

    def task(shard: int) -> ShardTask:
        job = shard_job(job_out, shard, options, schema)
        job = dataclasses.replace(job, dictionaries=dictionaries)
        return ShardTask(job, slice_shard(plan, shard), target, dict(storage_options or {}))

    tasks = (task(shard) for shard in range(meta.num_shards) if shard not in finished)
    done = sum(r.planned for r in finished.values())
    with BuildProgress(meta.num_inputs, done, enabled=options.progress) as progress:
        results = list(run_on_dask(tasks, cluster, progress))
    return worker_lines(results)


def _remove_build_files(out: Path) -> None:
    shutil.rmtree(out / BUILD_DIR)
    for leftover in (out / SHARDS_DIR).glob("*.tmp"):  # from jobs of a killed build
        leftover.unlink(missing_ok=True)


def summary_of(out: Path, seconds: float) -> BuildSummary:
    manifest = read_manifest(out / MANIFEST_NAME)
    stats = manifest.stats
    return BuildSummary(
        inputs=stats["inputs"],
        samples=manifest.num_samples,
        shards=len(manifest.shards),
        bytes=sum(s.bytes for s in manifest.shards),
        rejected=stats["rejected"],
        converted=stats["converted"],
        seconds=seconds,
    )


def finish_dataset(
    out: Path, meta: PlanMeta, *, options: BuildOptions, schema: Schema, notes: dict[str, Any],
    kind: str,
) -> None:  # fmt: skip
    """Index, rejects and manifest from the records of every shard, then the build files go."""
    records = [load_record(out, shard) for shard in range(meta.num_shards)]
    build_info = {
        "source_kind": kind, "samples_per_shard": meta.samples_per_shard, **options.shaping(),
        **notes,
    }  # fmt: skip
    write_dataset_manifest(
        out, meta, records, build_info, schema, shard_format=options.shard_format
    )
    _remove_build_files(out)


def build(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: BuildOptions = DEFAULT_OPTIONS,
    *,
    cluster: Any = None,
    staging: str | os.PathLike[str] | None = None,
) -> BuildSummary:
    """Compile `source` (ImageFolder tree, list file, webdataset tars or URLs) into `out`.

    Output bytes depend only on the source and the output-shaping options, never on `workers`,
    the cluster or the nodes. `cluster` (a Dask scheduler address or `distributed.Client`) runs
    the shard jobs as tasks on its workers, which must see the source and `out` at the same
    paths. With `options.num_nodes > 1`, this call builds node `options.node_rank`'s share of
    the shards only, planning in `staging` (default: under the cache directory); a later call
    with `resume` (and no node share) writes the index and manifest. Raises SourceError for a
    bad source, BuildError when `out` is not usable, for a reject with `strict`, and for a
    `resume` whose options differ from the interrupted build's."""
    started = time.perf_counter()
    source, out = os.fspath(source), Path(out)  # a source may be a URL: no Path of it
    kind = detect_kind(source, options.source_format)
    _check_apart(Path(source), out)
    fingerprint = {"source": source_id(source), "source_kind": kind, **options.shaping()}
    share = options.node_share
    if cluster is not None and share:
        raise BuildError("a build on a cluster takes no node share (num_nodes, node_rank)")
    state = check_out_dir(out, resume=options.resume or share, fingerprint=fingerprint)
    if state is OutState.COMPLETE:
        return summary_of(out, time.perf_counter() - started)
    if cluster is not None:
        from .cluster.dask_runner import check_cluster  # noqa: PLC0415 - an optional extra

        check_cluster(cluster)
    notes: tuple[str, ...] = ()
    if share:
        local = node_plan_dir(str(out), options, Path(staging) if staging is not None else None)
        local_state = check_out_dir(local, resume=True, fingerprint=fingerprint)
        meta = plan_build(source, local, kind=kind, state=local_state, options=options,
                     fingerprint=fingerprint)  # fmt: skip
        start_build_dir(out, fingerprint)
        plan_dir = local / BUILD_DIR
    else:
        meta = plan_build(
            source, out, kind=kind, state=state, options=options, fingerprint=fingerprint
        )
        plan_dir = out / BUILD_DIR
    schema, schema_notes = dataset_schema(out, plan_dir, meta, options)
    if cluster is not None:
        (out / SHARDS_DIR).mkdir(exist_ok=True)
        finished = DirectoryTarget(out).finished(range(meta.num_shards))
        notes = run_on_cluster(plan_dir, meta=meta, options=options, schema=schema,
                               cluster=cluster, target=str(out), finished=finished)  # fmt: skip
    else:
        shards = node_shards(meta.num_shards, options)
        run_shards(out, plan_dir, meta=meta, options=options, schema=schema, shards=shards)
    if share:
        shards = node_shards(meta.num_shards, options)
        finished = DirectoryTarget(out).finished(range(meta.num_shards))
        note = share_note(options, len(finished), meta.num_shards, str(out))
        records = [finished[s] for s in shards]
        summary = share_summary(records, time.perf_counter() - started, note)
        all_done = len(finished) == meta.num_shards
        shutil.rmtree(local)  # this node's shards are finished: its plan is not needed again
        if not (options.resume and all_done):
            return summary
    finish_dataset(out, meta, options=options, schema=schema, notes=schema_notes, kind=kind)
    return dataclasses.replace(summary_of(out, time.perf_counter() - started), notes=notes)
