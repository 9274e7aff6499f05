"""`append()`: new inputs into new shards, published as the dataset's next version.

Only the new inputs are read, checked and written: they are built by the build's own stages
with the dataset's shaping options into a staging directory (`stage`), their keys continuing
the dataset's plan positions and their classes extending its classes; then the staged shards
join the dataset and version N's index, rejects and manifest are written, `fastpack.json` last
(`publish`, `publish_store`). No file an earlier version uses changes, so readers of earlier
versions read on undisturbed. One append at a time holds the dataset's `append.lock` (`lock`).
An interrupted append is finished by a call with `resume`: the staged build resumes as a build
does and publishing skips what it finished.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastpack.formats import Manifest
from fastpack.storage import RetryPolicy

from ..build import DEFAULT_OPTIONS
from ..errors import SourceError
from ..jobs.duplicates import StoredDataset
from ..options import BuildOptions, BuildSummary
from ..planning import PlanBase
from .dataset import (
    LocalDataset,
    StoreDataset,
    check_appendable,
    image_field,
    open_target,
    remove_staging,
)
from .errors import AppendError
from .lock import LockInfo
from .options import append_options
from .stage import Staged, StoredOf, stage_build
from .summary import AppendSummary


def _stage(  # noqa: PLR0913 -- keyword inputs
    source: str,
    *,
    partial: Path,
    options: BuildOptions,
    target: LocalDataset | StoreDataset,
    latest: Manifest,
    skip_duplicates: bool,
) -> Staged:
    """The staged build of `source` in `partial`, continuing the dataset's `latest` version
    (`stage.stage_build`); a source refused before any shard leaves nothing to resume."""
    fresh = not partial.exists()
    stored_of: StoredOf = None
    if skip_duplicates:

        def stored_of(build_dir: Path) -> StoredDataset:
            return target.stored(latest, build_dir)

    base = PlanBase(
        key_base=latest.stats["inputs"],
        key_width=latest.key_width,
        classes=latest.classes,
        schema=latest.schema,
    )
    try:
        return stage_build(
            source,
            partial,
            options,
            base=base,
            schema=latest.schema,
            dictionaries=target.dictionaries(latest),
            stored_of=stored_of,
        )
    except SourceError:
        if fresh:
            remove_staging(partial)
        raise


def _published_already(
    target: LocalDataset | StoreDataset, taken: LockInfo, latest: Manifest
) -> AppendSummary:
    """The summary of an interrupted append that had published its version (`latest`)."""
    note = (
        f"the interrupted append ({taken.describe()}) had published version "
        f"{latest.dataset_version} already; its leftovers are removed"
    )
    empty = BuildSummary(
        inputs=0, samples=0, shards=0, bytes=0, rejected=0, converted=0, seconds=0.0
    )
    return AppendSummary.of(target.name, latest, empty, (note,))


def _staging_state(staging: Path, version: int, *, resume: bool, taken: LockInfo | None) -> None:
    """AppendError where `staging` holds an interrupted append and this call does not resume
    it, or this call resumes and there is nothing to resume."""
    if staging.exists() and not resume:
        raise AppendError(
            f"{staging}: holds an interrupted append of version {version}; pass --resume "
            "(resume=True) to finish it, or remove that directory to drop it"
        )
    if resume and taken is None and not staging.exists():
        raise AppendError(
            f"{staging}: no interrupted append of version {version} to resume; append "
            "without --resume"
        )


def append(  # noqa: PLR0913 -- public signature
    dataset: str | os.PathLike[str],
    source: str | os.PathLike[str],
    options: BuildOptions = DEFAULT_OPTIONS,
    *,
    staging: str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    keep_staging: bool = False,
    retry: RetryPolicy | None = None,
    skip_duplicates: bool = False,
) -> AppendSummary:
    """Append the inputs of `source` (any source `build` takes) to the dataset `dataset` (a
    directory or a URL) as its next version.

    `options` says how to run (workers, strict, progress, the source's format, resume); the
    shaping options are the dataset's (`AppendError` where `options` sets one otherwise). A
    local dataset is staged in `versions/NNNNNN.partial/` inside it; a dataset in an object
    store in `staging` (default: under the cache directory). With `resume`, finish an
    interrupted append (taking over its lock where its process is gone). With
    `skip_duplicates`, new inputs whose bytes a sample of the dataset's image field holds
    exactly (any version), or an earlier new input has, are left out: neither stored nor
    rejected, counted in the manifest's `stats.duplicates` (a resume must pass the same). Raises
    `AppendLockedError` while another append runs, `AppendError` for a dataset an append cannot
    grow, `SourceError` for a source of other fields or labels, and what `build` raises."""
    started = time.perf_counter()
    target = open_target(
        os.fspath(dataset),
        staging=Path(staging) if staging is not None else None,
        storage_options=storage_options,
        retry=retry,
    )
    latest, text = target.latest()
    check_appendable(latest, target.name)
    if skip_duplicates:
        image_field(latest, target.name)
    run_options = append_options(latest, options, target.name)
    lock = target.lock()
    taken = lock.acquire(latest.dataset_version + 1, resume=options.resume)
    try:
        now, now_text = target.latest()
        if now_text != text:  # another append published while this one took the lock
            raise AppendError(
                f"{target.name}: another append published version {now.dataset_version} while "
                f"this one started from version {latest.dataset_version}; append again"
            )
        version = latest.dataset_version + 1
        for leftover in target.leftovers(latest.dataset_version):
            remove_staging(leftover)
        if taken is not None and taken.version <= latest.dataset_version:
            return _published_already(target, taken, latest)
        partial = target.staging(version)
        _staging_state(partial, version, resume=options.resume, taken=taken)
        staged = _stage(
            os.fspath(source),
            partial=partial,
            options=run_options,
            target=target,
            latest=latest,
            skip_duplicates=skip_duplicates,
        )
        manifest = target.publish(version, (latest, text), (partial, staged.manifest))
        if not keep_staging:
            remove_staging(partial)
    finally:
        lock.release()
    notes = () if taken is None else (f"took over the lock of a gone append ({taken.describe()})",)
    added = BuildSummary.of_manifest(staged.manifest, time.perf_counter() - started)
    return AppendSummary.of(
        target.name,
        manifest,
        dataclasses.replace(added, kept=staged.kept),
        notes,
        duplicates=(staged.manifest.stats.get("duplicates", 0), staged.duplicates),
    )
