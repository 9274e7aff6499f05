"""TFRecord sources: files of `tf.train.Example` records, one sample per record.

Which files: a `.tfrecord` / `.tfrecords` file (of any name, given the tfrecord format), a
directory of them, a glob, or webdataset URLs (`tfrecord.files`). Each file is read once, a large
chunk at a time; every record's two CRCs are checked and its Example parsed during the scan,
which records where each bytes value lies in the file: the shard jobs read images and other
bytes as byte ranges of the file, with no parsing. Labels are read at scan time. Files are
scanned in parallel, one at a time per process (a process per core), and their rows streamed
into the plan in file order (`tfrecord.rows`).

Which features feed which fields (`tfrecord.layout`):

- Without a schema, TensorFlow's layout (ImageNet's, and that of fastpack's own record shards,
  formats/SPEC.md section 4.2): `image/encoded` is the image `jpg` (jpeg; a `png` field when the
  first record's `image/format` says png), `image/class/label` the label `cls` (class; none when
  none of the first records has one), and each `fastpack/<name>` feature the field `<name>`,
  typed by its extension (`formats.type_of_extension`) and optional unless every one of the
  first records has it. `image/format`, `image/height`, `image/width`, `image/channels`,
  `image/colorspace` and `fastpack/key` are left out without a word; any other feature is left
  out with one `LeftOutWarning`. So the shards of a fastpack record dataset, as a source, give
  its samples back (but for zstd fields, whose members are not passed through).
- With a schema (`SourceOptions.schema`), each field takes the feature its `column` names; a
  field whose column none of the first records has takes its default feature instead, if they
  have that one (the image `image/encoded`, the label `image/class/label`, any other field
  `fastpack/<name>`). The first jpeg field is the image, the first class field the label.
  Features no field takes are left out (silently with `"unnamed": "drop"`).

A bytes feature feeds any field with its one value (read from the file by the shard job, and
encoded by the field's type: a jpeg, png, raw, text, json, `.npy` ndarray, a class as decimal
text, class ids as JSON); an int64 list feeds a class (one value), class_ids, an ndarray (of the
field's dtype, else int64) or json (the list); a float list (float32 values) feeds an ndarray
(give the dtype `<f4` to store float32, else float64; a shape whose dimensions past the first
are fixed, such as `[null, 4]`, nests the flat list) or json. A label is an int64 feature's
one value, or a bytes feature's text (numbered by name, as list files number them). The "first
records" are those of the first file that has any, up to `SURVEY_RECORDS`.

Each sample's source is `<file>:<byte offset of its record>`, the file relative to the files'
common directory (a remote file: the base name of its URL). A record that cannot be used is a
reject at that source, and the build goes on: a data CRC mismatch (the next record is read), a
length CRC mismatch or a truncated record (the rest of the file is left out, the next file is
read), bytes that are not an Example, and an Example without its image or label (or with one
of the wrong kind, or several values). A build with `strict` stops at the first.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import closing
from pathlib import Path

from fastpack.formats import ShardFormatError
from fastpack.formats.example import parse_example
from fastpack.formats.tfrecord import FIELD_PREFIX, RecordProblem

from ..labels import LabelTable
from ..left_out import warn_left_out
from ..scan import PlanRow, SourceOptions, SourceScan
from ..urls import name_problem
from .files import (
    TFRECORD_SUFFIXES,
    RecordFile,
    file_records,
    is_tfrecord_name,
    record_files,
)
from .layout import Layout, Survey, layout_for
from .rows import FileScan, scan_file

SURVEY_RECORDS = 1000
IN_FLIGHT = 2  # files scanned or waiting to be streamed, per worker process


def _survey(files: Sequence[RecordFile]) -> Survey:
    """The features of the first `SURVEY_RECORDS` good records of the first file with any."""
    survey = Survey()
    for file in files:
        with closing(file_records(file)) as records:
            for data, _, item in records:
                if survey.records == SURVEY_RECORDS:
                    break
                if isinstance(item, RecordProblem):
                    continue
                try:
                    features = parse_example(data, item.data_offset, item.data_offset + item.size)
                except ShardFormatError:
                    continue
                survey.add(data, features)
        if survey.records:
            break
    return survey


def _file_scans(
    layout: Layout, files: Sequence[RecordFile], processes: int | None
) -> Iterator[FileScan]:
    """Each file's scan, in order: files scanned by a pool of `processes` processes (None: one
    per core; at most one per file), up to `IN_FLIGHT` per process ahead of the one streamed."""
    workers = min(len(files), processes or os.cpu_count() or 1)
    if workers <= 1:
        for container, file in enumerate(files):
            yield scan_file(layout, file, container)
        return
    pool = ProcessPoolExecutor(workers, mp_context=mp.get_context())
    todo = iter(enumerate(files))
    pending: deque[Future[FileScan]] = deque()

    def submit() -> None:
        following = next(todo, None)
        if following is not None:
            container, file = following
            pending.append(pool.submit(scan_file, layout, file, container))

    try:
        for _ in range(IN_FLIGHT * workers):
            submit()
        while pending:
            scan = pending.popleft().result()
            submit()
            yield scan
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _warn_left_out(file: RecordFile, at: int, names: list[str]) -> None:
    problems = [
        f"{name!r} {problem}"
        for name in names
        if name.startswith(FIELD_PREFIX)
        and (problem := name_problem(name.removeprefix(FIELD_PREFIX)))
    ]
    warn_left_out(
        f"{file.url}: record at byte {at}: features {', '.join(map(repr, names))} feed no "
        "field of the dataset (a schema file field whose column names one keeps it)"
        + (f"; {'; '.join(problems)}" if problems else "")
        + "; they are left out wherever they appear"
    )


def _rows(
    layout: Layout, files: Sequence[RecordFile], labels: LabelTable | None, processes: int | None
) -> Iterator[PlanRow]:
    """The rows of every file, in order; a `LeftOutWarning` where features that feed no field
    first appear (unless the schema drops them); text labels numbered by `labels`."""
    warned: set[str] = set()
    for file, scan in zip(files, _file_scans(layout, files, processes), strict=True):
        for at, names in scan.left_out:
            new = [name for name in names if name not in warned]
            warned.update(new)
            if new and not layout.drop_unnamed:
                _warn_left_out(file, at, new)
        if labels is None:
            yield from scan.rows
            continue
        ids = [labels.id(text) for text in scan.labels]
        for row in scan.rows:
            yield row if row.label < 0 else row._replace(label=ids[row.label])


def scan_tfrecord(
    source: str | os.PathLike[str],
    work_dir: Path | None = None,
    options: SourceOptions | None = None,
) -> SourceScan:
    """Open a TFRecord source; remote files are copied under `work_dir/sources/`. The first
    records are surveyed first (see the module's docstring)."""
    root, files = record_files(os.fspath(source), work_dir)
    schema = options.schema if options is not None else None
    layout = layout_for(schema, _survey(files))
    labels = LabelTable() if layout.text_labels else None
    return SourceScan(
        kind="tfrecord",
        root=root,
        rows=_rows(layout, files, labels, options.workers if options is not None else None),
        labels=labels,
        containers=tuple(os.path.relpath(f.path, root) for f in files),
        schema=layout.schema,
    )


class TfrecordSource:
    """TFRecord files of `tf.train.Example`s: a file, a directory, a glob or URLs."""

    kind = "tfrecord"
    description = "TFRecord files of tf.train.Example (a file, a directory, a quoted glob or URLs)"
    suffixes = TFRECORD_SUFFIXES
    directory_files: str | None = "TFRecord"
    file_only = False
    shard_urls = True
    member_images = True

    def names_file(self, name: str) -> bool:
        return is_tfrecord_name(name)

    def open(self, source: str, work_dir: Path | None, options: SourceOptions | None) -> SourceScan:
        return scan_tfrecord(source, work_dir, options)


TFRECORD = TfrecordSource()
