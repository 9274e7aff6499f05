"""`index_shards()`: a dataset over webdataset tars or TFRecord files that already exist, where
they are (formats/SPEC.md section 10): only its index, manifest, DALI indexes and rejects are
written; not one byte of shard data.

Each shard is read once, front to back (a local file, a mounted one, or an object at a URL,
streamed: never copied to disk), by one process of a pool (`IndexOptions.workers`); its
samples grouped as webdataset groups them (or one per record), each checked as a build checks
its samples (`sample_check`), its bytes hashed meanwhile (size, SHA-256, CRC-32C, recorded in
the manifest so that a changed shard is found). The shards' results are merged in shard order.
A sample that fails its check is left out and listed in `rejects.jsonl` as
`<shard name>#<key>` (TFRecords: `<shard name>#<record number>`); a shard that ends early keeps
its whole samples, and the sample the cut falls in (or the shard's tail) is listed.

`out` is a local directory or a URL prefix (then the files are written to a local directory
first and uploaded, the manifest last). The manifest records `shard_root`, where the shards lie,
unless that is `out` itself: a path relative to `out` for local shards and a local `out`, the
shards' URL prefix for remote ones, or `IndexOptions.shard_root` as given.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, Manifest
from fastpack.formats.shard_root import is_url
from fastpack.storage import Location

from ..build_schema import BuildSchema
from ..errors import OutputError
from ..images.policy import Check
from ..options import BuildSummary
from .job import JobSettings, ShardSource
from .labels import number_labels
from .record_job import index_records
from .shard_rows import ShardRows
from .shards import Format, list_shards
from .survey import record_layout, tar_layout
from .tar_job import index_tar
from .write import upload_dataset, write_dataset


@dataclass(frozen=True, kw_only=True)
class IndexOptions:
    """`schema`: the fields to index (None: inferred from the first shard); `classes`: the
    class names, label `k` is `classes[k]` (None: from the label members' text); `workers`:
    processes (None: one per core); `format`: `wds`, `tfrecord` or `auto` (by the names);
    `shard_root`: what the manifest records as the shards' root (None: found); `check`: the
    JPEG check (`structure` or `decode`); `storage_options`: for URLs (fsspec's)."""

    schema: BuildSchema | None = None
    classes: tuple[str, ...] | None = None
    workers: int | None = None
    format: Format = "auto"
    shard_root: str | None = None
    check: Check = "structure"
    storage_options: Mapping[str, Any] = field(default_factory=dict)


def _recorded_root(root: str, out: str, given: str | None) -> str | None:
    """The `shard_root` the manifest records: `given`, else None when the shards lie under
    `out` itself, else a relative path (local both) or the root itself."""
    if given is not None:
        return given
    if is_url(root) or is_url(out):
        return None if root.rstrip("/") == out.rstrip("/") else root
    relative = os.path.relpath(root, os.path.abspath(out))
    return None if relative == "." else relative.replace(os.sep, "/")


def _run(
    job: Callable[[ShardSource, JobSettings], ShardRows],
    shards: Sequence[ShardSource],
    settings: JobSettings,
    workers: int | None,
) -> list[ShardRows]:
    """Each shard's rows, in shard order; shards indexed by a pool of `workers` processes."""
    count = min(len(shards), workers or os.cpu_count() or 1)
    if count <= 1:
        return [job(s, settings) for s in shards]
    with ProcessPoolExecutor(count, mp_context=mp.get_context()) as pool:
        return list(pool.map(job, shards, [settings] * len(shards)))


def _check_out(out: str, storage_options: Mapping[str, Any]) -> None:
    if is_url(out):
        if Location(out, storage_options).size(MANIFEST_NAME) is not None:
            raise OutputError(f"{out}: holds a dataset already ({MANIFEST_NAME})")
        return
    if os.path.exists(os.path.join(out, MANIFEST_NAME)):
        raise OutputError(f"{out}: holds a dataset already ({MANIFEST_NAME})")


def index_shards(
    sources: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    options: IndexOptions | None = None,
) -> BuildSummary:
    """Index the shards `sources` name (files, directories, globs, URLs, URL prefixes) into
    `out` (a directory or a URL prefix); see the module's docstring. Raises SourceError for
    sources that name no usable shard, OutputError for an `out` that holds a dataset."""
    started = time.perf_counter()
    options = options or IndexOptions()
    out_text = os.fspath(out)
    storage = dict(options.storage_options)
    kind, root, shards = list_shards([os.fspath(s) for s in sources], options.format, storage)
    _check_out(out_text, storage)
    if kind == "wds":
        tar, schema = tar_layout(options.schema, shards[0], storage)
        settings = JobSettings(
            schema=schema,
            tar=tar,
            classes=options.classes,
            check=options.check,
            storage_options=storage,
        )
        job: Callable[[ShardSource, JobSettings], ShardRows] = index_tar
    else:
        records = record_layout(options.schema, shards[0], storage)
        settings = JobSettings(
            schema=records.schema,
            records=records,
            classes=options.classes,
            check=options.check,
            storage_options=storage,
        )
        job = index_records
    results = _run(job, shards, settings, options.workers)
    classes, labels = _labels(results, options.classes)
    recorded = _recorded_root(root, out_text, options.shard_root)

    def write(directory: Path) -> Manifest:
        return write_dataset(
            directory,
            results,
            labels,
            schema=settings.schema,
            classes=classes,
            shard_format="tar" if kind == "wds" else "tfrecord",
            shard_root=recorded,
            source_kind=kind,
        )

    if is_url(out_text):
        with tempfile.TemporaryDirectory(prefix="fastpack-index-") as staging:
            manifest = write(Path(staging))
            upload_dataset(Path(staging), Location(out_text, storage), manifest)
    else:
        Path(out_text).mkdir(parents=True, exist_ok=True)
        manifest = write(Path(out_text))
    summary = BuildSummary.of_manifest(manifest, time.perf_counter() - started)
    return replace(summary, notes=tuple(note for rows in results for note in rows.notes))


def _labels(
    results: Sequence[ShardRows], classes: tuple[str, ...] | None
) -> tuple[tuple[str, ...], list[list[int]]]:
    """The dataset's class names and each shard's final labels."""
    if not any(r.text_labels for r in results):
        return classes or (), [r.labels for r in results]
    names, lookups = number_labels([r.label_texts for r in results])
    labels = [
        [lookup[label] if label >= 0 else label for label in rows.labels]
        for rows, lookup in zip(results, lookups, strict=True)
    ]
    return names, labels
