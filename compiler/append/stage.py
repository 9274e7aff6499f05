"""The staged build of an append: the new inputs built by the build's own stages (plan, shard
jobs, finish) into a staging directory, as a whole dataset of their own whose keys continue the
dataset's plan positions, whose classes extend the dataset's and whose compressed fields use the
dataset's zstd dictionaries. A staged build resumes as a build does. One that skips duplicates
writes the dataset's content keys and the duplicates among the new inputs into its build
directory before the shard jobs (`jobs.duplicates`, `duplicate_pass`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from fastpack.formats import MANIFEST_NAME, Manifest, Schema, read_manifest

from ..build_dir import BUILD_DIR
from ..finish import finish_dataset
from ..jobs.duplicates import StoredDataset, StoredImages, write_table
from ..jobs.shard_record import DuplicateLine, KeptLine, load_record
from ..options import BuildOptions
from ..planning import Plan, PlanBase, PlanMeta
from ..sources.detect import detect_kind, source_id
from ..stages import plan_build, run_shards
from ..targets.directory import DirectoryTarget
from ..targets.out_dir import OPTIONS_NAME, OutState
from .duplicate_pass import list_duplicates
from .errors import AppendError

# Where the staged build finds the dataset it grows, given its build directory (a dataset in an
# object store downloads its index there); None: duplicates are not looked for.
StoredOf = Callable[[Path], StoredDataset] | None


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


def _plan(  # noqa: PLR0913 -- keyword inputs
    source: str,
    *,
    staged: Path,
    state: OutState,
    options: BuildOptions,
    base: PlanBase,
    prints: dict[str, object],
) -> tuple[PlanMeta, str]:
    kind = detect_kind(source, options.source_format)
    meta = plan_build(
        source, staged, kind=kind, state=state, options=options, fingerprint=prints, base=base
    )
    return meta, kind


def fingerprint(
    source: str, options: BuildOptions, *, skip_duplicates: bool = False
) -> dict[str, object]:
    """What a resume of the staged build must find unchanged (a build's fingerprint, and
    whether duplicates are left out)."""
    kind = detect_kind(source, options.source_format)
    found = {"source": source_id(source), "source_kind": kind, **options.shaping()}
    return {**found, "skip_duplicates": True} if skip_duplicates else found


def _check_skip(staged: Path, *, skip: bool) -> None:
    """AppendError where the interrupted staged build left duplicates out and this call does
    not, or the reverse: the inputs left out must be the same."""
    try:
        recorded = json.loads((staged / BUILD_DIR / OPTIONS_NAME).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    was = isinstance(recorded, dict) and recorded.get("skip_duplicates", False) is True
    if was != skip:
        raise AppendError(
            f"{staged}: cannot resume: the interrupted append was made with "
            f"skip_duplicates={was} (now {skip}); resume with the same, or remove that "
            "directory to drop the interrupted append"
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Staged:
    """A finished staged build: its manifest, the inputs stored otherwise than asked
    (`ShardRecord.kept`), and those left out as duplicates (empty where a resume found the
    staged build finished already: the manifest counts them)."""

    manifest: Manifest
    kept: tuple[KeptLine, ...] = ()
    duplicates: tuple[DuplicateLine, ...] = ()


def _look_for_duplicates(stored_of: StoredOf, build_dir: Path) -> StoredDataset | None:
    """The dataset's content keys and the duplicates among the new inputs, written into the
    build directory before the shard jobs (once: a resume reads them)."""
    if stored_of is None:
        return None
    stored = stored_of(build_dir)
    write_table(build_dir, stored)
    images = StoredImages(stored, build_dir)
    try:
        list_duplicates(Plan(build_dir), images, build_dir)
    finally:
        images.close()
    return stored


def stage_build(  # noqa: PLR0913 -- keyword inputs
    source: str,
    staged: Path,
    options: BuildOptions,
    *,
    base: PlanBase,
    schema: Schema,
    dictionaries: Mapping[str, bytes],
    stored_of: StoredOf = None,
) -> Staged:
    """Build `source` into the directory `staged` with `options` (the dataset's shaping), keys
    and classes continuing `base`, in the dataset's `schema` with its `dictionaries` (bytes by
    file name); or finish such a build, interrupted. With `stored_of`, the inputs whose image
    the dataset holds already, or an earlier new input has, are left out."""
    options = dataclasses.replace(options, resume=True)
    target = DirectoryTarget(staged, source, options, None)
    skip = stored_of is not None
    state = target.prepare(fingerprint(source, options))
    if state is OutState.COMPLETE:
        return Staged(manifest=read_manifest(staged / MANIFEST_NAME))
    if state is OutState.RESUME:
        _check_skip(staged, skip=skip)
    prints = fingerprint(source, options, skip_duplicates=skip)
    meta, kind = _plan(
        source, staged=staged, state=state, options=options, base=base, prints=prints
    )
    _check_plan(source, meta, base)
    target.planned(fingerprint(source, options))
    for name, data in dictionaries.items():
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        (staged / name).write_bytes(data)
    build_dir = staged / BUILD_DIR
    stored = _look_for_duplicates(stored_of, build_dir)
    finished = target.finished(range(meta.num_shards))
    run_shards(
        staged,
        build_dir,
        meta=meta,
        options=options,
        schema=schema,
        shards=[s for s in range(meta.num_shards) if s not in finished],
        done=sum(record.planned for record in finished.values()),
        duplicates=stored,
    )
    left_out = tuple(
        line for s in range(meta.num_shards) for line in load_record(staged, s).duplicates
    )
    manifest, kept = finish_dataset(
        staged, meta, options=options, schema=schema, notes={}, kind=kind
    )
    return Staged(manifest=manifest, kept=kept, duplicates=left_out)
