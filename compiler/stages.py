"""The stages of a build that every runner and target share: plan, schema, one shard's job and
the local run of the shard jobs (the finish is `finish.finish_dataset`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastpack.formats import SHARDS_DIR, Schema

from .build_dir import BUILD_DIR
from .jobs.dictionaries import train_dictionaries, with_dictionaries
from .jobs.duplicates import StoredDataset
from .jobs.progress import BuildProgress
from .jobs.runner import run_jobs
from .jobs.shard_job import ShardJob
from .jobs.shard_record import finished_record
from .options import BuildOptions
from .planning.make_plan import make_plan
from .planning.plan_base import PlanBase
from .planning.plan_store import Plan, PlanMeta, read_meta
from .targets.out_dir import OutState, start_build_dir


def plan_build(  # noqa: PLR0913 -- keyword inputs
    source: str,
    out: Path,
    *,
    kind: str,
    state: OutState,
    options: BuildOptions,
    fingerprint: dict[str, Any],
    base: PlanBase | None = None,
) -> PlanMeta:
    """The interrupted build's plan when resuming one that finished planning, else a new plan
    (with `base`, one whose keys and classes continue a dataset's: an append's)."""
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
            base=base,
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


def shard_job(
    out: Path,
    shard: int,
    options: BuildOptions,
    schema: Schema,
    duplicates: StoredDataset | None = None,
) -> ShardJob:
    """The job of shard `shard`, writing into `out`; with `duplicates`, leaving out the inputs
    that dataset holds already (an append's `skip_duplicates`)."""
    return ShardJob(
        out=str(out),
        shard=shard,
        max_side=options.max_side,
        quality=options.quality,
        check=options.check,
        strict=options.strict,
        schema=None if schema.is_v1 else schema,
        shard_format=options.shard_format,
        baseline=options.baseline,
        restart_width=options.restart_width,
        pixel_budget=options.pixel_budget,
        duplicates=duplicates,
    )


def run_shards(  # noqa: PLR0913 -- keyword inputs
    out: Path,
    plan_dir: Path,
    *,
    meta: PlanMeta,
    options: BuildOptions,
    schema: Schema,
    shards: Sequence[int],
    done: int,
    duplicates: StoredDataset | None = None,
) -> None:
    """Run the job of every shard in `shards` that is not finished in `out`, in this process or
    a pool of processes (`options.workers`). `done` inputs, of shards finished at the target
    already, count as done in the progress. `duplicates`: as `shard_job`'s."""
    (out / SHARDS_DIR).mkdir(exist_ok=True)
    todo = []
    total = done
    for shard in shards:
        start, stop = meta.shard_range(shard)
        total += stop - start
        record = finished_record(out, shard)
        if record is None:
            todo.append(shard_job(out, shard, options, schema, duplicates))
        else:
            done += record.planned
    workers = options.workers or os.cpu_count() or 1
    with BuildProgress(total, done, enabled=options.progress) as progress:
        run_jobs(todo, plan_dir, workers, progress)
