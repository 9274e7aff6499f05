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

pyarrow is imported on first use (`pip install 'fastpack[parquet]'`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from fastpack.formats import MAX_FIELD_NAME, NDARRAY_DTYPES, FieldSpec, Schema, field_type

from ...build_schema import BuildSchema
from ...errors import SourceError
from ..labels import LabelTable
from ..left_out import warn_left_out
from ..sample_fields import FieldValue, FileRef, MemberRef, pack_fields
from ..scan import NO_CONTAINER, PlanRow, SourceOptions, SourceScan
from ..spill import SPILL_DIR, SpillFile

BATCH_ROWS = 256
SPILL_NAME = "parquet-cells"
IMAGE_FIELD, LABEL_FIELD = "jpg", "cls"
IMAGE_COLUMNS = ("image", "img", "jpg", "jpeg", "png")
LABEL_COLUMNS = ("label", "labels")
_HF_SHARD = re.compile(r"(.+)-[0-9]{5}-of-[0-9]{5}\.parquet")
_NOT_NAME = re.compile(r"[^a-z0-9_]+")

# how a column's cells become values: spilled bytes (or a file, for a null `bytes` of an image
# struct), a file path, or inline
Kind = Literal["bytes", "path", "inline"]
Category = Literal["bytes", "string", "int", "float", "bool", "list", "struct", "map", "other"]


class MissingPyarrowError(SourceError, ImportError):
    """Reading Parquet needs pyarrow, which is not installed."""


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa  # noqa: PLC0415 - optional dependency
        import pyarrow.parquet as pq  # noqa: PLC0415
    except ImportError as e:
        raise MissingPyarrowError(
            "reading Parquet needs pyarrow: pip install 'fastpack[parquet]'"
        ) from e
    return pa, pq


# --- column types ----------------------------------------------------------------------------


def _is_bytes_struct(pa: Any, t: Any) -> bool:
    if not pa.types.is_struct(t) or t.get_field_index("bytes") < 0:
        return False
    return _category(pa, t.field("bytes").type) == "bytes"


# arrow type checks (`pyarrow.types.is_*`, some only in newer pyarrow) per category, in order
_CATEGORIES: tuple[tuple[Category, tuple[str, ...]], ...] = (
    ("bytes", ("binary", "large_binary", "fixed_size_binary", "binary_view")),
    ("string", ("string", "large_string", "string_view")),
    ("int", ("integer",)),
    ("float", ("floating",)),
    ("bool", ("boolean",)),
    ("list", ("list", "large_list", "fixed_size_list", "list_view", "large_list_view")),
)


def _category(pa: Any, t: Any) -> Category:
    """What an arrow type holds, as far as fields care (a dictionary type: its values')."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    for category, checks in _CATEGORIES:
        if any(getattr(pa.types, f"is_{c}", lambda _: False)(t) for c in checks):
            return category
    if _is_bytes_struct(pa, t):
        return "bytes"
    if pa.types.is_struct(t):
        return "struct"
    return "map" if pa.types.is_map(t) else "other"


def _children(pa: Any, t: Any) -> list[Any]:
    if pa.types.is_dictionary(t):
        return [t.value_type]
    if _category(pa, t) == "list":
        return [t.value_type]
    if pa.types.is_struct(t):
        return [t.field(i).type for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.key_type, t.item_type]
    return []


def _holds_bytes(pa: Any, t: Any) -> bool:
    return _category(pa, t) == "bytes" or any(_holds_bytes(pa, c) for c in _children(pa, t))


def _is_plain(pa: Any, t: Any) -> bool:
    """Whether `to_pylist` gives JSON values (no dates, decimals or bytes)."""
    if _category(pa, t) in ("string", "int", "float", "bool") or pa.types.is_null(t):
        return True
    children = _children(pa, t)
    return bool(children) and all(_is_plain(pa, c) for c in children)


def _leaf_dtype(pa: Any, t: Any) -> tuple[str | None, tuple[int | None, ...] | None]:
    """The dtype and shape of an ndarray held by a list column (None: not one, or any shape)."""
    dims: list[int | None] = []
    while _category(pa, t) == "list":
        dims.append(t.list_size if pa.types.is_fixed_size_list(t) else None)
        t = t.value_type
    if _category(pa, t) not in ("int", "float", "bool"):
        return None, None
    dtype = np.dtype(t.to_pandas_dtype()).str
    dtype = dtype if dtype in NDARRAY_DTYPES else None
    return dtype, (tuple(dims) if None not in dims[1:] else None)


# --- Hugging Face metadata -------------------------------------------------------------------


def _hf_features(schema: Any) -> dict[str, Any]:
    """The `features` of a Hugging Face file's metadata (empty when it has none)."""
    raw = (schema.metadata or {}).get(b"huggingface")
    try:
        features = json.loads(raw)["info"]["features"] if raw else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return features if isinstance(features, dict) else {}


def _class_names(feature: Any) -> tuple[str, ...]:
    """A `ClassLabel`'s names, also inside a `Sequence` or list feature."""
    if isinstance(feature, list) and len(feature) == 1:
        return _class_names(feature[0])
    if not isinstance(feature, dict):
        return ()
    if feature.get("_type") == "ClassLabel":
        names = feature.get("names")
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return tuple(names)
        return ()
    return _class_names(feature.get("feature"))


# --- fields from columns ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Column:
    """A field, the column that fills it, and how its cells become values (`plain`: inline
    values need no conversion to be JSON)."""

    spec: FieldSpec
    column: str
    kind: Kind
    plain: bool = True


@dataclass(frozen=True)
class _Layout:
    """The image column, the label column (None: no label field; `text`: labels numbered by a
    LabelTable, else integers, named by `classes`), and the other fields in tar order."""

    image: _Column
    label: _Column | None
    text_labels: bool
    classes: tuple[str, ...]
    fields: tuple[_Column, ...]
    order: tuple[str, ...] = ()  # the fields' names in tar order; () for image, label, fields

    @property
    def columns(self) -> list[str]:
        found = [self.image.column, *([self.label.column] if self.label else [])]
        return list(dict.fromkeys(found + [f.column for f in self.fields]))

    @property
    def schema(self) -> Schema:
        specs = [self.image.spec, *([self.label.spec] if self.label else [])]
        specs += [f.spec for f in self.fields]
        if self.order:
            by_name = {s.name: s for s in specs}
            specs = [by_name[name] for name in self.order]
        return Schema(tuple(specs))


def _field_name(column: str, extension: str) -> str:
    base = _NOT_NAME.sub("_", column.lower()).strip("_") or "column"
    return f"{base[: MAX_FIELD_NAME - len(extension) - 1]}.{extension}"


def _default_field(pa: Any, field: Any, feature: Any, where: str) -> _Column | None:
    """A column's field when no schema names it; None (with a warning) for one no field holds."""
    name, t = field.name, field.type
    category, optional = _category(pa, t), field.nullable
    if category == "bytes":
        return _Column(
            FieldSpec(name=_field_name(name, "bin"), type="raw", optional=optional), name, "bytes"
        )
    if _holds_bytes(pa, t):
        warn_left_out(
            f"{where}: column {name!r} ({t}) holds bytes inside lists or structs, which no "
            "field holds; it is left out (a schema file can take a binary column as a raw field)"
        )
        return None
    if category == "string":
        return _Column(
            FieldSpec(name=_field_name(name, "txt"), type="text", optional=optional), name, "inline"
        )
    if category == "list":
        dtype, shape = _leaf_dtype(pa, t)
        value = t.value_type
        if _category(pa, value) == "int":
            spec = FieldSpec(
                name=_field_name(name, "json"),
                type="class_ids",
                optional=optional,
                classes=_class_names(feature),
            )
            return _Column(spec, name, "inline")
        if dtype is not None and dtype[1] == "f":
            spec = FieldSpec(
                name=_field_name(name, "npy"),
                type="ndarray",
                optional=optional,
                dtype=dtype,
                shape=shape,
            )
            return _Column(spec, name, "inline")
    spec = FieldSpec(name=_field_name(name, "json"), type="json", optional=optional)
    return _Column(spec, name, "inline", plain=_is_plain(pa, t))


def _default_image(pa: Any, schema: Any, where: str) -> _Column:
    for field in schema:
        if field.name.lower() in IMAGE_COLUMNS and _category(pa, field.type) in ("bytes", "string"):
            kind: Kind = "bytes" if _category(pa, field.type) == "bytes" else "path"
            return _Column(FieldSpec(name=IMAGE_FIELD, type="jpeg"), field.name, kind)
    for field in schema:
        if _is_bytes_struct(pa, field.type):
            return _Column(FieldSpec(name=IMAGE_FIELD, type="jpeg"), field.name, "bytes")
    columns = ", ".join(f"{f.name} ({f.type})" for f in schema)
    raise SourceError(
        f"{where}: no image column: expected a column named {', '.join(IMAGE_COLUMNS)} or a "
        f"struct with a binary 'bytes' child; the columns are {columns} (a schema file can name "
        "the image's column)"
    )


def _default_label(pa: Any, schema: Any, features: dict[str, Any]) -> Any:
    """The label column's arrow field, or None."""
    for field in schema:
        if field.name.lower() in LABEL_COLUMNS and _category(pa, field.type) in ("int", "string"):
            return field
    for field in schema:
        if _category(pa, field.type) == "int" and _class_names(features.get(field.name)):
            return field
    return None


def _default_layout(pa: Any, schema: Any, where: str) -> _Layout:
    features = _hf_features(schema)
    image = _default_image(pa, schema, where)
    label = _default_label(pa, schema, features)
    fields, names = [], {IMAGE_FIELD: image.column, LABEL_FIELD: label.name if label else ""}
    for field in schema:
        if field.name in (image.column, label.name if label else None):
            continue
        found = _default_field(pa, field, features.get(field.name), where)
        if found is None:
            continue
        if found.spec.name in names:
            raise SourceError(
                f"{where}: columns {names[found.spec.name]!r} and {field.name!r} both make field "
                f"{found.spec.name!r}; a schema file can name their fields"
            )
        names[found.spec.name] = field.name
        fields.append(found)
    label_column = None
    if label is not None:
        spec = FieldSpec(name=LABEL_FIELD, type="class")
        label_column = _Column(spec, label.name, "inline")
    text = label is not None and _category(pa, label.type) == "string"
    classes = _class_names(features.get(label.name)) if label is not None and not text else ()
    return _Layout(image, label_column, text, classes, tuple(fields))


_ACCEPTS: dict[str, tuple[Category, ...]] = {
    "jpeg": ("bytes", "string"), "png": ("bytes", "string"), "raw": ("bytes", "string"),
    "text": ("string", "bytes"), "class": ("int", "string"),
    "class_ids": ("list", "string"), "ndarray": ("list", "int", "float", "bool", "bytes"),
}  # fmt: skip


def _schema_column(pa: Any, spec: FieldSpec, column: str, schema: Any, where: str) -> _Column:
    index = schema.get_field_index(column)
    if index < 0:
        raise SourceError(
            f"{where}: no column {column!r} (for field {spec.name!r}); the columns are "
            f"{schema.names}"
        )
    t = schema.field(index).type
    category = _category(pa, t)
    accepted = _ACCEPTS.get(spec.type)
    if accepted is not None and category not in accepted:
        raise SourceError(
            f"{where}: column {column!r} ({t}) cannot fill the {spec.type} field {spec.name!r}"
        )
    if category == "bytes" or (spec.type == "json" and category == "string"):
        return _Column(spec, column, "bytes")  # JSON text: spilled, checked by its encoding
    if category == "string" and field_type(spec.type).file_value:
        return _Column(spec, column, "path")
    if spec.type == "json" and _holds_bytes(pa, t):
        raise SourceError(f"{where}: column {column!r} ({t}) holds bytes, which JSON cannot")
    return _Column(spec, column, "inline", plain=_is_plain(pa, t))


def _schema_layout(pa: Any, build: BuildSchema, schema: Any, where: str) -> _Layout:
    dataset = build.schema
    image, label = dataset.image_field, dataset.label_field
    if image is None:
        raise SourceError(f"schema: no jpeg field for the images; fields: {list(dataset.names)}")
    columns = {
        f.spec.name: _schema_column(pa, f.spec, f.column, schema, where) for f in build.fields
    }
    label_column = columns[label] if label is not None else None
    text = False
    classes: tuple[str, ...] = ()
    if label_column is not None:
        field = schema.field(label_column.column)
        text = _category(pa, field.type) == "string"
        if not text:
            classes = _class_names(_hf_features(schema).get(field.name))
    rest = tuple(c for name, c in columns.items() if name not in (image, label))
    return _Layout(columns[image], label_column, text, classes, rest, dataset.names)


# --- files -----------------------------------------------------------------------------------


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


def _check_columns(pq: Any, files: list[Path], layout: _Layout, first: Any) -> None:
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


# --- cells -----------------------------------------------------------------------------------


def _spilled(pa: Any, array: Any, spill: SpillFile) -> list[MemberRef | None]:
    """Each cell's bytes appended to `spill` (one write for the array); None for a null."""
    valid = array.is_valid().to_pylist()
    if not pa.types.is_large_binary(array.type):
        array = array.cast(pa.large_binary())
    _, offsets_buffer, data = array.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[array.offset : array.offset + len(array) + 1]
    start = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    base = spill.add(memoryview(data)[start:end] if data is not None else b"").offset - start
    ends = offsets[1:].tolist()
    return [
        MemberRef(spill.container, base + s, e - s) if ok else None
        for s, e, ok in zip(offsets[:-1].tolist(), ends, valid, strict=True)
    ]


def _byte_cells(pa: Any, array: Any, spill: SpillFile) -> list[MemberRef | FileRef | None]:
    """The cells of a bytes column: spilled; in an image struct, a null `bytes` with a `path` is
    the file at that path."""
    if not pa.types.is_struct(array.type):
        return list(_spilled(pa, array, spill))
    children = array.flatten()  # the struct's nulls applied to its children
    t = array.type
    cells: list[MemberRef | FileRef | None] = list(
        _spilled(pa, children[t.get_field_index("bytes")], spill)
    )
    at = t.get_field_index("path")
    if at >= 0 and _category(pa, t.field(at).type) == "string":
        paths = children[at].to_pylist()
        cells = [
            c if c is not None or not p else FileRef(p) for c, p in zip(cells, paths, strict=True)
        ]
    return cells


def _inline(array: Any, plain: bool) -> list[Any]:
    values = array.to_pylist()
    if plain:
        return list(values)
    return [None if v is None else json.loads(json.dumps(v, default=str)) for v in values]


def _cells(pa: Any, column: _Column, array: Any, spill: SpillFile) -> Sequence[FieldValue]:
    if column.kind == "bytes":
        return _byte_cells(pa, array, spill)
    if column.kind == "path":
        return [None if p is None else FileRef(p) for p in array.to_pylist()]
    return _inline(array, column.plain)


# --- the scan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scan:
    files: list[Path]
    source: Path
    root: Path
    layout: _Layout
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
        images = _cells(pa, layout.image, batch.column(layout.image.column), spill)
        labels = batch.column(layout.label.column).to_pylist() if layout.label else None
        columns = [
            (f.spec.name, _cells(pa, f, batch.column(f.column), spill)) for f in layout.fields
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
    pa, pq = _pyarrow()
    options = options or SourceOptions()
    files = _files(source)
    if not files:
        raise SourceError(f"{source}: no .parquet files")
    first = _read_schema(pq, files[0])
    where = str(files[0])
    if options.schema is None:
        layout = _default_layout(pa, first, where)
    else:
        layout = _schema_layout(pa, options.schema, first, where)
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
