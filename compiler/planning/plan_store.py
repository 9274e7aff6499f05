"""The build plan on disk, in `<out>/.fastpack-build/`: one row per input, as flat numpy files.

Written once, streaming, by the planning pass; memory-mapped read-only by every shard job, so that
neither side holds the inputs as Python objects. Files (little-endian, no header; lengths follow
from `plan.json`):

    plan.source.blob      |u1   source strings (filesystem bytes), concatenated
    plan.source.offsets   <u8   N+1 starts into the blob
    plan.label            <i8   N final labels
    plan.size             <u8   N input sizes in bytes (stat sizes, or tar member sizes)
    plan.container        <u4   N container of each image (sources with containers only;
                                `NO_CONTAINER`: a file)
    plan.offset           <u8   N image data offset inside that container (same sources)
    plan.fields.blob      |u1   each row's other fields (`sample_fields.pack_fields`), concatenated
    plan.fields.offsets   <u8   N+1 starts into that blob (only when some row has fields)
    plan.order            <i8   N input row of each plan position (shuffled builds only)
    plan.json                   `PlanMeta`; written last, so its presence means the plan is whole
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
from fastpack.formats import Schema
from fastpack.formats.schema import V1_SCHEMA, parse_schema

from ..errors import BuildDirError
from ..sources.scan import PlanRow

META = "plan.json"
_DTYPES = {
    "source.blob": "|u1",
    "source.offsets": "<u8",
    "label": "<i8",
    "size": "<u8",
    "container": "<u4",
    "offset": "<u8",
    "fields.blob": "|u1",
    "fields.offsets": "<u8",
    "order": "<i8",
}
_BLOBS = ("source.blob", "fields.blob")
_MEMBER_COLUMNS = ("container", "offset")
_CHUNK = 1 << 16
_REMAP_CHUNK = 1 << 20

Column = npt.NDArray[Any]


def _path(directory: Path, column: str) -> Path:
    return directory / f"plan.{column}"


@dataclass(frozen=True, kw_only=True)
class PlanMeta:
    kind: str
    root: str
    containers: tuple[str, ...]
    classes: tuple[str, ...]
    num_inputs: int
    total_size: int
    samples_per_shard: int
    num_shards: int
    key_width: int
    shuffled: bool
    schema: list[dict[str, Any]] | None = None  # `Schema.to_json()` in force; None: V1_SCHEMA
    fields: bool = False  # the plan has `fields.*` columns
    text_cells: bool = False  # inline field values are a list file's cell text, to be parsed
    train: tuple[str, ...] = ()  # fields to train a zstd dictionary for
    key_base: int = 0  # plan position of the first input: a dataset's inputs so far (appends)

    def field_schema(self) -> Schema:
        """The schema the plan was made for."""
        return V1_SCHEMA if self.schema is None else parse_schema(self.schema, META)

    def shard_range(self, shard: int) -> tuple[int, int]:
        """Plan positions `[start, stop)` of a shard."""
        start = shard * self.samples_per_shard
        return start, min(start + self.samples_per_shard, self.num_inputs)


class PlanWriter:
    """Appends rows in chunks; `close` returns `(rows, total size)`. The `fields.*` columns
    start with the first row that has fields (earlier rows get empty ones)."""

    def __init__(self, directory: Path, *, members: bool) -> None:
        self._directory = directory
        columns = ["source.blob", "source.offsets", "label", "size"]
        columns += list(_MEMBER_COLUMNS) if members else []
        self._files: dict[str, BinaryIO] = {}
        self._pending: dict[str, list[Any]] = {}
        for column in columns:
            self._open(column)
        self._rows = self._blob_size = self._fields_size = self._total_size = 0
        np.zeros(1, dtype="<u8").tofile(self._files["source.offsets"])

    def _open(self, column: str) -> None:
        self._files[column] = _path(self._directory, column).open("wb")
        self._pending[column] = []

    @property
    def has_fields(self) -> bool:
        return "fields.blob" in self._files

    def add(self, row: PlanRow) -> None:
        pending = self._pending
        pending["source.blob"].append(row.source)
        self._blob_size += len(row.source)
        pending["source.offsets"].append(self._blob_size)
        pending["label"].append(row.label)
        pending["size"].append(row.size)
        self._total_size += row.size
        if "container" in pending:
            pending["container"].append(row.container)
            pending["offset"].append(row.offset)
        if row.fields or "fields.blob" in pending:
            self._add_fields(row.fields)
        self._rows += 1
        if self._rows % _CHUNK == 0:
            self._flush()

    def _add_fields(self, fields: bytes) -> None:
        if "fields.blob" not in self._pending:  # the first row with fields
            self._open("fields.blob")
            self._open("fields.offsets")
            self._pending["fields.offsets"].extend([0] * (self._rows + 1))
        self._pending["fields.blob"].append(fields)
        self._fields_size += len(fields)
        self._total_size += len(fields)
        self._pending["fields.offsets"].append(self._fields_size)

    def _flush(self) -> None:
        for column, values in self._pending.items():
            if column in _BLOBS:
                self._files[column].write(b"".join(values))
            else:
                np.asarray(values, dtype=_DTYPES[column]).tofile(self._files[column])
            values.clear()

    def close(self) -> tuple[int, int]:
        self._flush()
        for file in self._files.values():
            file.close()
        return self._rows, self._total_size

    def __enter__(self) -> PlanWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for file in self._files.values():
            file.close()


def remap_labels(directory: Path, rows: int, lookup: npt.NDArray[np.int64]) -> None:
    """Replace each stored label id `i` by `lookup[i]`, a chunk at a time; a negative id (a
    sample without a label) stays -1."""
    labels = np.memmap(_path(directory, "label"), dtype="<i8", mode="r+", shape=(rows,))
    table = np.append(lookup, np.int64(-1))  # id -1 reads its last entry
    for start in range(0, rows, _REMAP_CHUNK):
        chunk = labels[start : start + _REMAP_CHUNK]
        chunk[:] = table[np.maximum(chunk, -1)]
    labels.flush()


def write_order(directory: Path, rows: int, seed: int) -> None:
    """The shuffle: a permutation of the input rows, 8 bytes per input, held in memory once."""
    order = np.random.default_rng(seed).permutation(rows).astype("<i8")
    order.tofile(_path(directory, "order"))


def write_meta(directory: Path, meta: PlanMeta) -> None:
    tmp = directory / (META + ".tmp")
    tmp.write_text(json.dumps(asdict(meta), sort_keys=True), encoding="utf-8")
    os.replace(tmp, directory / META)


def _damaged(path: Path, what: str) -> BuildDirError:
    return BuildDirError(
        f"{path}: {what}; the build directory is damaged: remove {path.parent.parent} and build "
        "again"
    )


def read_meta(directory: Path) -> PlanMeta | None:
    """The plan's metadata, or None when no whole plan exists; BuildDirError if unreadable."""
    path = directory / META
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as e:  # not JSON, or not UTF-8
        raise _damaged(path, f"unreadable build plan ({e})") from e
    try:
        data["containers"], data["classes"] = tuple(data["containers"]), tuple(data["classes"])
        data["train"] = tuple(data.get("train", ()))
        return PlanMeta(**data)
    except (KeyError, TypeError) as e:  # a key missing or unknown, or not an object
        raise _damaged(path, f"build plan with the wrong keys ({e!r})") from e


def _required(meta: PlanMeta) -> list[str]:
    """The columns a plan of `meta` has (see the module docstring)."""
    columns = ["source.blob", "source.offsets", "label", "size"]
    if meta.containers:
        columns += _MEMBER_COLUMNS
    if meta.fields:
        columns += ["fields.blob", "fields.offsets"]
    if meta.shuffled:
        columns.append("order")
    return columns


class Plan:
    """A whole plan, memory-mapped read-only; BuildDirError if missing or damaged."""

    def __init__(self, directory: Path) -> None:
        meta = read_meta(directory)
        if meta is None:
            raise _damaged(directory / META, "no build plan")
        self.meta = meta
        n = meta.num_inputs
        self._columns: dict[str, Column] = {}
        for column in _required(meta):
            path, dtype = _path(directory, column), _DTYPES[column]
            shape = None if column in _BLOBS else (n + column.endswith(".offsets"),)
            try:
                self._columns[column] = np.memmap(path, dtype=dtype, mode="r", shape=shape)
            except FileNotFoundError as e:
                raise _damaged(path, "build plan column missing") from e
            except ValueError as e:  # shorter than the plan's rows
                raise _damaged(path, f"build plan column cut short ({e})") from e

    def inputs(self, start: int, stop: int) -> npt.NDArray[np.int64]:
        """The input rows at plan positions `[start, stop)`."""
        if "order" in self._columns:
            return np.array(self._columns["order"][start:stop])
        return np.arange(start, stop, dtype=np.int64)

    def column(self, name: str, rows: npt.NDArray[np.int64]) -> Column:
        return np.asarray(self._columns[name][rows])

    def sources(self, rows: npt.NDArray[np.int64]) -> list[bytes]:
        return self._strings("source", rows)

    def fields(self, rows: npt.NDArray[np.int64]) -> list[bytes]:
        """Each row's packed fields (`sample_fields.pack_fields`); empty in a plan without."""
        if "fields.blob" not in self._columns:
            return [b""] * len(rows)
        return self._strings("fields", rows)

    def _strings(self, name: str, rows: npt.NDArray[np.int64]) -> list[bytes]:
        blob, offsets = self._columns[f"{name}.blob"], self._columns[f"{name}.offsets"]
        starts, ends = offsets[rows], offsets[rows + 1]
        return [blob[a:b].tobytes() for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
