"""Parquet sources: one `.parquet` file, or a directory of them in name order, laid out as Hugging
Face datasets are: an image column, a label, captions and other columns.

The files are streamed a row group at a time (`ParquetFile.iter_batches` over one row group,
`BATCH_ROWS` rows a batch, only the columns the fields use): memory holds one row group's
column chunks, whatever the files' size. Each batch's cells that are bytes (images, binary
columns) are appended to one spill file in the build directory, in one write per column, and
the shard jobs read them by offset (`MemberRef`); every other cell travels inline in the plan.

Columns become fields by the schema (`SourceOptions.schema`: each field's `column`), else:

- the image (field `jpg`): a column named image, img, jpg, jpeg or png, else the first struct
  column with a binary `bytes` child (the Hugging Face `Image` feature: `{"bytes", "path"}`; a
  null `bytes` makes `path` the image's file, relative to `SourceOptions.images_root` or the
  source's directory); a binary column holds the image's bytes, a string column its path;
- the label (field `cls`, class): a column named label or labels of integers (names from the
  Hugging Face `ClassLabel` metadata when the file has it) or of strings (numbered as list files
  number them), else the first integer column that metadata calls a `ClassLabel`, else none;
- every other column, in the file's order, named after it (lower-cased, other characters `_`):
  strings as text (`<column>.txt`); numbers and booleans as json (`<column>.json`); lists of
  integers as class_ids (`<column>.json`, with `ClassLabel` names when given); lists of floats,
  nested or fixed-size, as an ndarray (`<column>.npy`, the column's dtype, and its shape where the
  column fixes it); binary columns and further image structs as raw bytes (`<column>.bin`); lists
  of strings, structs and maps as json (a map as a list of key-value pairs); other values (dates,
  decimals) as json, written as text. A column that holds bytes inside a list or struct is left
  out, with a `LeftOutWarning` (a schema file can take it as raw bytes only as a whole column).

A field is optional when its column is nullable (a null cell: the field is absent). A null label
or a label of blank text is a SourceError naming the file and row; a null image is an empty one,
rejected by its shard job.

With a schema: the first jpeg field is the image and the first class field the label, as above;
jpeg, png and raw fields take binary columns or image structs (spilled) or string columns (paths
of files); text, class and class_ids fields take their column's values inline; json fields take
any column (a string column holds JSON text); ndarray fields take list or number columns, or
binary ones holding `.npy` bytes. A directory whose files are Hugging Face shards of several
splits (`train-00000-of-00004.parquet`, `test-...`) is refused: a source is one split.

pyarrow is imported on first use (`pip install 'fastpack[parquet]'`). The fields are chosen in
`layout` (an arrow type's category in `arrow_types`, the Hugging Face metadata in
`hf_metadata`); a batch's cells become plan values in `cells`; this module reads the files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SourceError
from ..labels import LabelTable
from ..sample_fields import FieldValue, FileRef, MemberRef, pack_fields
from ..scan import NO_CONTAINER, PlanRow, SourceOptions, SourceScan
from ..spill import SPILL_DIR, SpillFile
from .arrow_types import pyarrow_modules
from .cells import column_cells
from .layout import Layout, default_layout, schema_layout

BATCH_ROWS = 256
SPILL_NAME = "parquet-cells"
_HF_SHARD = re.compile(r"(.+)-[0-9]{5}-of-[0-9]{5}\.parquet")


def _files(source: Path) -> list[Path]:
    if not source.is_dir():
        return [source]
    with os.scandir(source) as it:
        names = sorted(e.name for e in it if e.name.endswith(".parquet") and e.is_file())
    splits = sorted({m.group(1) for n in names if (m := _HF_SHARD.fullmatch(n))})
    if len(splits) > 1:
        raise SourceError(
            f"{source}: holds the Parquet files of several splits ({', '.join(splits)}); a "
            "source is one split: give one file, or a directory of one split's files"
        )
    return [source / n for n in names]


def _check_columns(pq: Any, files: list[Path], layout: Layout, first: Any) -> None:
    """Every file has the layout's columns, of the first file's types."""
    for path in files[1:]:
        schema = _read_schema(pq, path)
        for column in layout.columns:
            index = schema.get_field_index(column)
            expected = first.field(column).type
            if index < 0:
                raise SourceError(f"{path}: no column {column!r}, which {files[0].name} has")
            if schema.field(index).type != expected:
                raise SourceError(
                    f"{path}: column {column!r} is {schema.field(index).type}, but "
                    f"{expected} in {files[0].name}"
                )


def _read_schema(pq: Any, path: Path) -> Any:
    try:
        return pq.read_schema(path)
    except FileNotFoundError as e:
        raise SourceError(f"{path}: not found") from e
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid, ArrowIOError
        raise SourceError(f"{path}: not a readable Parquet file ({e})") from e


@dataclass(frozen=True)
class _Scan:
    files: list[Path]
    source: Path
    root: Path
    layout: Layout
    labels: LabelTable | None

    def _image(self, cell: FieldValue, name: str, spill: SpillFile) -> tuple[bytes, int, int, int]:
        """(source, size, container, offset) of an image cell."""
        if isinstance(cell, MemberRef):
            return os.fsencode(name), cell.size, cell.container, cell.offset
        if isinstance(cell, FileRef):
            try:
                size = os.stat(self.root / cell.path).st_size
            except OSError:  # kept: rejected when its shard job cannot read it
                size = 0
            return os.fsencode(cell.path), size, NO_CONTAINER, 0
        empty = spill.add(b"")  # a null image: empty, rejected by its shard job
        return os.fsencode(name), 0, empty.container, empty.offset

    def _label(self, value: Any, name: str, row: int) -> int:
        layout = self.layout
        if layout.label is None:
            return -1
        if value is None or (self.labels is not None and not str(value).strip()):
            what = "null" if value is None else "blank"
            raise SourceError(
                f"{self.source / name}: row {row}: the label (column {layout.label.column!r}) "
                f"is {what}"
            )
        return int(value) if self.labels is None else self.labels.id(str(value).strip())

    def _batch_rows(
        self, pa: Any, batch: Any, spill: SpillFile, name: str, first: int
    ) -> Iterator[PlanRow]:
        layout = self.layout
        images = column_cells(pa, layout.image, batch.column(layout.image.column), spill)
        labels = batch.column(layout.label.column).to_pylist() if layout.label else None
        columns = [
            (f.spec.name, column_cells(pa, f, batch.column(f.column), spill)) for f in layout.fields
        ]
        for i in range(batch.num_rows):
            row = first + i
            label = self._label(labels[i] if labels is not None else None, name, row)
            values = {field: cells[i] for field, cells in columns if cells[i] is not None}
            source, size, container, offset = self._image(images[i], f"{name}:{row}", spill)
            yield PlanRow(source, label, size, container, offset, pack_fields(values))

    def _file_rows(self, pq: Any, pa: Any, path: Path, spill: SpillFile) -> Iterator[PlanRow]:
        """One file's rows, a row group at a time."""
        name = os.path.relpath(path, self.source)
        file = pq.ParquetFile(path)
        first = 0
        for group in range(file.num_row_groups):
            for batch in file.iter_batches(
                batch_size=BATCH_ROWS, row_groups=[group], columns=self.layout.columns
            ):
                yield from self._batch_rows(pa, batch, spill, name, first)
                first += batch.num_rows

    def rows(self, pq: Any, pa: Any, work_dir: Path) -> Iterator[PlanRow]:
        with SpillFile(work_dir, SPILL_NAME, container=0) as spill:
            for path in self.files:
                try:
                    yield from self._file_rows(pq, pa, path, spill)
                except SourceError:
                    raise
                except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid, ArrowIOError
                    raise SourceError(f"{path}: not a readable Parquet file ({e})") from e


def scan_parquet(
    source: Path, work_dir: Path | None = None, options: SourceOptions | None = None
) -> SourceScan:
    """Open a Parquet source (see the module's docstring); cells that are bytes go to a spill
    file under `work_dir`."""
    pa, pq = pyarrow_modules()
    options = options or SourceOptions()
    files = _files(source)
    if not files:
        raise SourceError(f"{source}: no .parquet files")
    first = _read_schema(pq, files[0])
    where = str(files[0])
    if options.schema is None:
        layout = default_layout(pa, first, where)
    else:
        layout = schema_layout(pa, options.schema, first, where)
    _check_columns(pq, files, layout, first)
    if work_dir is None:
        raise SourceError(f"{source}: a Parquet source needs a build directory for its bytes")
    directory = source if source.is_dir() else source.parent
    root = options.images_root or directory
    labels = LabelTable() if layout.text_labels else None
    scan = _Scan(files, directory, root, layout, labels)
    return SourceScan(
        kind="parquet",
        root=root,
        rows=scan.rows(pq, pa, work_dir),
        classes=layout.classes,
        labels=labels,
        containers=(str((work_dir / SPILL_DIR / SPILL_NAME).absolute()),),
        schema=layout.schema,
    )


class ParquetSource:
    """A `.parquet` file, or a directory of them."""

    kind = "parquet"
    description = "a .parquet file or a directory of them, laid out as Hugging Face datasets are"
    suffixes = (".parquet",)
    directory_files: str | None = ".parquet"
    file_only = False
    shard_urls = False
    member_images = True

    def names_file(self, name: str) -> bool:
        return False

    def open(self, source: str, work_dir: Path | None, options: SourceOptions | None) -> SourceScan:
        return scan_parquet(Path(source), work_dir, options)


PARQUET = ParquetSource()
