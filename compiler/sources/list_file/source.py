"""List-file sources: CSV, TSV or JSONL, one image per line: its path (relative to the list
file), its label and, optionally, more fields (which column feeds which field: `list_file.fields`).

- CSV/TSV: a `path,label` header row is skipped; a header with more columns (among them `path`
  and `label`) makes each other column a field. With a build schema the first row is the header,
  and it must hold every column the schema names. Cells of png, jpeg and raw fields are paths
  relative to the list file; other cells are parsed by the shard jobs (class ids: integers
  separated by spaces, or a JSON list; an ndarray: a JSON list; json: JSON text).
- JSONL: an object per line with a string `path` (or the schema's image column), a `label`, and
  a key per other field, whose value is the field's value (a list for class ids or boxes, an
  object for json; for png, jpeg and raw a path relative to the list file).
- An empty cell, a missing key or null is an absent value: the sample lacks an optional field; a
  required one rejects the sample (in its shard job). A JSONL string is a text or json field's
  value even when blank (`""` is the empty text). Without a build schema the label is
  required (an error here, as for a list of images and labels alone).

Blank lines are skipped. Without extra columns a scan yields rows without fields, as it always
did. A row's size is its image's file size plus those of its png, jpeg and raw fields' files.

A list may also be an object at a URL (`s3://bucket/lists/train.csv`, `list_input`): it is
read streaming, and its paths resolve against the list's URL "directory" as relative URL
references do (`img/a.jpg`, `../img/a.jpg`, `/img/a.jpg` from the bucket's top, or a whole
URL). Its row sizes are estimated from the first rows (`url_sizes`), not asked for one by one.
An absolute URL in a local list is read from the store too; its size counts 0.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any, TextIO

from fastpack.formats import field_type
from fastpack.storage import is_url

from ...errors import SourceError
from ..labels import LabelTable
from ..sample_fields import FieldValue, FileRef, pack_fields
from ..scan import PlanRow, SourceOptions, SourceScan
from .fields import (
    LABEL_COLUMN,
    PATH_COLUMN,
    SURVEY_LINES,
    ListColumns,
    from_build_schema,
    from_header,
    from_objects,
)
from .input import ListInput, list_input
from .url_sizes import with_estimated_sizes

LIST_SUFFIXES = (".csv", ".tsv", ".jsonl")
_HEADER = [PATH_COLUMN, LABEL_COLUMN]
_INTEGER = re.compile(r"-?[0-9]+")

Entry = tuple[int, str, str]  # (line number, path, label)
Cells = tuple[int, list[str]]  # (line number, row)


class _ListFile:
    """The list file open as UTF-8 text, read by line; a SourceError naming it (and the last
    line read) for bytes that are not UTF-8, or that cannot be read (from a store)."""

    def __init__(self, source: ListInput) -> None:
        self.source, self.name = source, source.name
        self._file: TextIO = source.open()
        self.line = 0

    def __enter__(self) -> _ListFile:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        self._file.close()
        if isinstance(exc, UnicodeDecodeError):
            raise SourceError(
                f"{self.name}: not UTF-8 text after line {self.line} ({exc.reason})"
            ) from exc
        if isinstance(exc, OSError):
            raise SourceError(f"{self.name}: cannot read after line {self.line}: {exc}") from exc

    def csv_rows(self) -> Iterator[Cells]:
        """Non-empty rows of a CSV (TSV for a `.tsv` file)."""
        delimiter = "\t" if self.source.suffix == ".tsv" else ","
        reader = csv.reader(self._file, delimiter=delimiter)
        try:
            for row in reader:
                self.line = reader.line_num
                if row:
                    yield reader.line_num, row
        except csv.Error as e:
            raise SourceError(f"{self.name}:{reader.line_num}: malformed line ({e})") from e

    def json_lines(self) -> Iterator[tuple[int, Any, str]]:
        """`(line number, decoded value, line)` of each non-blank line."""
        for number, line in enumerate(self._file, start=1):
            self.line = number
            if not line.strip():
                continue
            try:
                item: Any = json.loads(line)
            except json.JSONDecodeError as e:
                raise SourceError(f"{self.name}:{number}: not valid JSON ({e.msg})") from e
            yield number, item, line


def _delimited(file: _ListFile) -> Iterator[Entry]:
    first, name = True, file.name
    for number, row in file.csv_rows():
        if first:
            first = False
            if [c.strip().lower() for c in row] == _HEADER:
                continue
        if len(row) != len(_HEADER):
            raise SourceError(
                f"{name}:{number}: expected 2 columns (path, label), found {len(row)}: {row!r}"
            )
        yield number, row[0], row[1]


def _entries(file: _ListFile) -> Iterator[Entry]:
    name = file.name
    for number, item, line in file.json_lines():
        label = item.get("label") if isinstance(item, dict) else None
        if not (
            isinstance(item, dict)
            and isinstance(item.get("path"), str)
            and isinstance(label, (str, int))
            and not isinstance(label, bool)
        ):
            raise SourceError(
                f"{name}:{number}: expected an object with a string 'path' and an integer or "
                f"string 'label', found {line.strip()[:200]}"
            )
        yield number, item["path"], str(label)


def _simple_rows(source: ListInput, labels: LabelTable) -> Iterator[PlanRow]:
    """The rows of a list of images and labels alone: no fields."""
    with _ListFile(source) as file:
        entries = _entries(file) if source.suffix == ".jsonl" else _delimited(file)
        for number, raw_image, raw_label in entries:
            image, label = raw_image.strip(), raw_label.strip()
            if not image or not label:
                what = "path" if not image else "label"
                raise SourceError(f"{source.name}:{number}: empty {what}")
            yield PlanRow(os.fsencode(image), labels.id(label), source.file_size(image))


class _RowMaker:
    """Turns one line's image, label and field values into its PlanRow."""

    def __init__(
        self, source: ListInput, columns: ListColumns, labels: LabelTable, *, schema: bool
    ) -> None:
        self._source, self._name = source, source.name
        self._labels = labels
        self._schema = schema  # a build schema: absent labels are allowed
        spec = columns.label_spec
        self._label_name = spec.name if spec is not None else None
        self._classes = {c: i for i, c in enumerate(spec.classes)} if spec is not None else {}

    def row(self, number: int, image: Any, label: Any, values: dict[str, FieldValue]) -> PlanRow:
        image = image.strip() if isinstance(image, str) else ""
        if not image:
            raise SourceError(f"{self._name}:{number}: empty path")
        size = self._source.file_size(image)
        for value in values.values():
            if isinstance(value, FileRef):
                size += self._source.file_size(value.path)
        label_id = self._label(number, label, values)
        # text with lone surrogates packs; the shard job rejects it, naming the field
        return PlanRow(os.fsencode(image), label_id, size, fields=pack_fields(values))

    def _label(self, number: int, label: Any, values: dict[str, FieldValue]) -> int:
        """The label's id (or final value); -1 with the value left in `values` where the shard
        job is to decide (absent: null; not an integer or a class name: the value)."""
        name = self._label_name
        if name is None:
            return -1
        text = label.strip() if isinstance(label, str) else label
        if text is None or text == "":
            if not self._schema:
                raise SourceError(f"{self._name}:{number}: empty label")
            values[name] = None
            return -1
        if isinstance(text, bool) or not isinstance(text, (int, str)):
            if not self._schema:
                raise SourceError(
                    f"{self._name}:{number}: expected an integer or string 'label', found "
                    f"{label!r:.200}"
                )
            values[name] = label
            return -1
        text = str(text)
        if not self._classes:
            return self._labels.id(text)
        found = self._classes.get(text)
        if found is None and _INTEGER.fullmatch(text):
            found = int(text)
        if found is None:
            values[name] = text
            return -1
        return found


def _cell_value(kind: str, cell: str) -> FieldValue | None:
    """A CSV cell's value (None: absent); the shard job parses text by the field's type."""
    if not cell.strip():
        return None
    return FileRef(cell.strip()) if field_type(kind).file_value else cell


def _json_value(kind: str, value: Any) -> FieldValue | None:
    """A JSONL value (None: absent); a blank string is absent but for text and json, whose
    value it is."""
    blank = isinstance(value, str) and not value.strip() and not field_type(kind).blank_value
    if value is None or blank:
        return None
    names_file = field_type(kind).file_value and isinstance(value, str)
    return FileRef(value.strip()) if names_file else value


def _header_positions(header: list[str], columns: ListColumns, name: str, number: int) -> list[int]:
    positions = []
    for column in columns.columns:
        if column not in header:
            raise SourceError(
                f"{name}:{number}: the header has no column {column!r}; its columns are "
                f"{', '.join(header)}"
            )
        positions.append(header.index(column))
    return positions


def _header(row: list[str]) -> list[str]:
    """A header row's column names: `path` and `label` in any case."""
    return [c.strip().lower() if c.strip().lower() in _HEADER else c.strip() for c in row]


def _csv_field_rows(
    source: ListInput, columns: ListColumns, maker: _RowMaker, *, inferred: bool
) -> Iterator[PlanRow]:
    name = source.name
    with _ListFile(source) as file:
        rows = file.csv_rows()
        first = next(rows, None)
        if first is None:
            return
        number, header = first[0], [c.strip() for c in first[1]]
        header = _header(header) if inferred else header
        image, *others = _header_positions(header, columns, name, number)
        label = others.pop(0) if columns.label is not None else None
        specs = [
            (spec.name, spec.type, k) for (spec, _), k in zip(columns.fields, others, strict=True)
        ]
        for number, row in rows:
            if len(row) != len(header):
                raise SourceError(
                    f"{name}:{number}: expected {len(header)} columns ({', '.join(header)}), "
                    f"found {len(row)}: {row!r}"
                )
            values = {}
            for field, kind, k in specs:
                value = _cell_value(kind, row[k])
                if value is not None:
                    values[field] = value
            yield maker.row(number, row[image], row[label] if label is not None else None, values)


def _jsonl_field_rows(
    source: ListInput, columns: ListColumns, maker: _RowMaker, *, inferred: bool
) -> Iterator[PlanRow]:
    name = source.name
    known = set(columns.columns)
    specs = [(spec.name, spec.type, column) for spec, column in columns.fields]
    with _ListFile(source) as file:
        for number, item, line in file.json_lines():
            if not isinstance(item, dict) or not isinstance(item.get(columns.image), str):
                raise SourceError(
                    f"{name}:{number}: expected an object with a string {columns.image!r}, "
                    f"found {line.strip()[:200]}"
                )
            if inferred and not known.issuperset(item):
                unknown = sorted(set(item) - known)
                raise SourceError(
                    f"{name}:{number}: keys {unknown} are not among those of the first "
                    f"{SURVEY_LINES} lines; give a schema (--schema) that names them"
                )
            values = {}
            for field, kind, column in specs:
                value = _json_value(kind, item.get(column))
                if value is not None:
                    values[field] = value
            label = item.get(columns.label) if columns.label is not None else None
            yield maker.row(number, item[columns.image], label, values)


def _survey(source: ListInput) -> ListColumns | None:
    """The fields of a list file without a build schema (None: only images and labels)."""
    name = source.name
    with _ListFile(source) as file:
        if source.suffix == ".jsonl":
            items = [item for _, item, _ in islice(file.json_lines(), SURVEY_LINES)]
            objects = [i for i in items if isinstance(i, dict)]
            extra = any(set(o) - set(_HEADER) for o in objects)
            return from_objects(objects, name) if extra else None
        head = list(islice(file.csv_rows(), SURVEY_LINES))
    header = _header(head[0][1]) if head else []
    if len(header) <= len(_HEADER) or PATH_COLUMN not in header or LABEL_COLUMN not in header:
        return None
    return from_header(header, [row for _, row in head[1:]], name)


def scan_list(path: Path | str, options: SourceOptions | None = None) -> SourceScan:
    """Inputs in the order of the file's lines (see the module docstring); `path` may be a
    URL."""
    source = list_input(path)
    if source.suffix not in LIST_SUFFIXES:
        raise SourceError(f"{source.name}: a list file must end in {', '.join(LIST_SUFFIXES)}")
    labels = LabelTable()
    build = options.schema if options is not None else None
    columns = from_build_schema(build, source.name) if build is not None else _survey(source)
    rows = _rows(source, columns, labels, schema=build is not None)
    root, url = (Path(), source.root) if isinstance(source.root, str) else (source.root, None)
    if url is not None:
        rows = with_estimated_sizes(rows, url)
    cells = source.suffix != ".jsonl"  # CSV and TSV cells are text, JSON lines typed values
    if columns is None:
        return SourceScan(
            kind="list", root=root, url=url, rows=rows, labels=labels, text_cells=cells
        )
    spec = columns.label_spec
    if spec is None or spec.classes:
        classes = spec.classes if spec is not None else ()
        return SourceScan(
            kind="list",
            root=root,
            url=url,
            rows=rows,
            classes=classes,
            schema=columns.schema,
            text_cells=cells,
        )
    return SourceScan(
        kind="list",
        root=root,
        url=url,
        rows=rows,
        labels=labels,
        schema=columns.schema,
        text_cells=cells,
    )


def _rows(
    source: ListInput, columns: ListColumns | None, labels: LabelTable, *, schema: bool
) -> Iterator[PlanRow]:
    """The rows of the list, by the columns found (None: images and labels alone)."""
    if columns is None:
        return _simple_rows(source, labels)
    maker = _RowMaker(source, columns, labels, schema=schema)
    if source.suffix == ".jsonl":
        return _jsonl_field_rows(source, columns, maker, inferred=not schema)
    return _csv_field_rows(source, columns, maker, inferred=not schema)


class ListSource:
    """A CSV, TSV or JSONL list file, at a path or a URL; never a directory."""

    kind = "list"
    description = "a CSV, TSV or JSONL list file of image paths and labels (local or a URL)"
    suffixes = LIST_SUFFIXES
    directory_files: str | None = None
    file_only = True
    shard_urls = False
    member_images = False

    def names_file(self, name: str) -> bool:
        return False

    def open(self, source: str, work_dir: Path | None, options: SourceOptions | None) -> SourceScan:
        return scan_list(source if is_url(source) else Path(source), options)


LIST = ListSource()
