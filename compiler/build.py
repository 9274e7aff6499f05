"""`build()`: source -> plan -> shard jobs in parallel -> index, rejects, manifest."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, SHARDS_DIR, Schema, read_manifest

from .build_dir import BUILD_DIR
from .errors import BuildError
from .jobs.dictionaries import train_dictionaries, with_dictionaries
from .jobs.progress import BuildProgress
from .jobs.runner import run_jobs
from .jobs.shard_job import ShardJob
from .jobs.shard_record import finished_record, load_record
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


def _plan(
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


def _dataset_schema(
    out: Path, meta: PlanMeta, options: BuildOptions
) -> tuple[Schema, dict[str, Any]]:
    """The dataset's schema, with the dictionaries trained for it, and what the manifest's
    `build` says of those dictionaries."""
    schema = meta.field_schema()
    if not meta.train:
        return schema, {}
    trained = train_dictionaries(out, Plan(out / BUILD_DIR), options.dictionary_size)
    notes = {
        name: "trained" if d is not None else "too few samples to train: frames without one"
        for name, d in trained.items()
    }
    return with_dictionaries(schema, trained), {"dictionaries": notes}


def _run_shards(out: Path, meta: PlanMeta, options: BuildOptions, schema: Schema) -> None:
    """Run the job of every shard that is not finished (all of them, unless resuming)."""
    (out / SHARDS_DIR).mkdir(exist_ok=True)
    todo, done = [], 0
    job_schema = None if schema.is_v1 else schema
    for shard in range(meta.num_shards):
        record = finished_record(out, shard)
        if record is None:
            todo.append(ShardJob(out=str(out), shard=shard, max_side=options.max_side,
                                 quality=options.quality, check=options.check,
                                 strict=options.strict, schema=job_schema,
                                 shard_format=options.shard_format))  # fmt: skip
        else:
            done += record.planned
    workers = options.workers or os.cpu_count() or 1
    with BuildProgress(meta.num_inputs, done, enabled=options.progress) as progress:
        run_jobs(todo, out / BUILD_DIR, workers, progress)


def _remove_build_files(out: Path) -> None:
    shutil.rmtree(out / BUILD_DIR)
    for leftover in (out / SHARDS_DIR).glob("*.tmp"):  # from jobs of a killed build
        leftover.unlink(missing_ok=True)


def _summary_of(out: Path, seconds: float) -> BuildSummary:
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


def build(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: BuildOptions = DEFAULT_OPTIONS,
) -> BuildSummary:
    """Compile `source` (ImageFolder tree, list file, webdataset tars or URLs) into `out`.

    Output bytes depend only on the source and the output-shaping options, never on `workers`.
    Raises SourceError for a bad source, BuildError when `out` is not usable, for a reject with
    `strict`, and for a `resume` whose options differ from the interrupted build's."""
    started = time.perf_counter()
    source, out = os.fspath(source), Path(out)  # a source may be a URL: no Path of it
    kind = detect_kind(source, options.source_format)
    _check_apart(Path(source), out)
    fingerprint = {"source": source_id(source), "source_kind": kind, **options.shaping()}
    state = check_out_dir(out, resume=options.resume, fingerprint=fingerprint)
    if state is not OutState.COMPLETE:
        meta = _plan(source, out, kind=kind, state=state, options=options, fingerprint=fingerprint)
        schema, notes = _dataset_schema(out, meta, options)
        _run_shards(out, meta, options, schema)
        records = [load_record(out, shard) for shard in range(meta.num_shards)]
        build_info = {
            "source_kind": kind, "samples_per_shard": meta.samples_per_shard, **options.shaping(),
            **notes,
        }  # fmt: skip
        write_dataset_manifest(
            out, meta, records, build_info, schema, shard_format=options.shard_format
        )
        _remove_build_files(out)
    return _summary_of(out, time.perf_counter() - started)
