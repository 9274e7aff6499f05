"""The staged build of an append: the new inputs built by the build's own stages (plan, shard
jobs, finish) into a staging directory, as a whole dataset of their own whose keys continue the
dataset's plan positions, whose classes extend the dataset's and whose compressed fields use the
dataset's zstd dictionaries. A staged build resumes as a build does."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from fastpack.formats import MANIFEST_NAME, Manifest, Schema, read_manifest

from ..build_dir import BUILD_DIR
from ..finish import finish_dataset
from ..options import BuildOptions
from ..planning import PlanBase, PlanMeta, make_plan, read_meta
from ..runners.local import LocalRunner
from ..runners.run import Run
from ..sources.detect import detect_kind, source_id
from ..targets.directory import DirectoryTarget
from ..targets.out_dir import OutState, start_build_dir
from .errors import AppendError


def _check_plan(source: str, meta: PlanMeta, base: PlanBase) -> None:
    """The plan's fields are the dataset's, and it continues the dataset where it ends now
    (a resumed plan was made by an earlier call)."""
    base.check_schema(source, meta.field_schema())
    if (meta.key_base, meta.key_width) != (base.key_base, base.key_width):
        raise AppendError(
            f"{source}: the staged append's keys start at {meta.key_base} ({meta.key_width} "
            f"digits), the dataset's next is {base.key_base} ({base.key_width}): the dataset "
            "changed since; remove the staging directory and append again"
        )


def _plan(
    source: str, staged: Path, state: OutState, options: BuildOptions, base: PlanBase
) -> tuple[PlanMeta, str]:
    kind = detect_kind(source, options.source_format)
    meta = read_meta(staged / BUILD_DIR) if state is OutState.RESUME else None
    if meta is None:
        build_dir = start_build_dir(staged, fingerprint(source, options))
        meta = make_plan(
            source,
            kind,
            build_dir,
            shard_size=options.shard_size,
            shuffle_seed=options.shuffle_seed,
            options=options.source_options(),
            base=base,
        )
    return meta, kind


def fingerprint(source: str, options: BuildOptions) -> dict[str, object]:
    """What a resume of the staged build must find unchanged (a build's fingerprint)."""
    kind = detect_kind(source, options.source_format)
    return {"source": source_id(source), "source_kind": kind, **options.shaping()}


def stage_build(  # noqa: PLR0913 -- keyword inputs
    source: str,
    staged: Path,
    options: BuildOptions,
    *,
    base: PlanBase,
    schema: Schema,
    dictionaries: Mapping[str, bytes],
) -> tuple[Manifest, tuple[tuple[str, str], ...]]:
    """Build `source` into the directory `staged` with `options` (the dataset's shaping), keys
    and classes continuing `base`, in the dataset's `schema` with its `dictionaries` (bytes by
    file name); or finish such a build, interrupted. The staged dataset's manifest, and the
    inputs stored otherwise than asked (`ShardRecord.kept`)."""
    options = dataclasses.replace(options, resume=True)
    target = DirectoryTarget(staged, source, options, None)
    state = target.prepare(fingerprint(source, options))
    if state is OutState.COMPLETE:
        return read_manifest(staged / MANIFEST_NAME), ()
    meta, kind = _plan(source, staged, state, options, base)
    _check_plan(source, meta, base)
    target.planned(fingerprint(source, options))
    for name, data in dictionaries.items():
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        (staged / name).write_bytes(data)
    every = range(meta.num_shards)
    run = Run(
        plan_dir=staged / BUILD_DIR,
        meta=meta,
        options=options,
        schema=schema,
        target=target,
        finished=target.finished(every),
    )
    LocalRunner().run(run)
    manifest, kept = finish_dataset(
        staged, meta, options=options, schema=schema, notes={}, kind=kind
    )
    return manifest, kept
