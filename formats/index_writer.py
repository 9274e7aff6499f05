"""Writing `index.fpx` (formats/SPEC.md section 3) one shard's rows at a time."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import numpy as np
import numpy.typing as npt

from .errors import CorruptIndexError
from .index_layout import (
    ENTRY_SIZE,
    ENTRY_STRUCT,
    HEADER_SIZE,
    HEADER_STRUCT,
    INDEX_MAGIC,
    AnyArray,
    align,
    expected_count,
    field_section_stem,
    section_dtypes,
)
from .layout import SUPPORTED_VERSIONS


@dataclass(frozen=True, kw_only=True)
class IndexPart:
    """The index rows of one shard, in sample order; what the compiler appends per shard."""

    shard: int
    labels: npt.NDArray[np.int64]
    key_blob: npt.NDArray[np.uint8]
    key_offsets: npt.NDArray[np.uint64]
    source_blob: npt.NDArray[np.uint8]
    source_offsets: npt.NDArray[np.uint64]
    offsets: Mapping[str, npt.NDArray[np.uint64]]
    sizes: Mapping[str, npt.NDArray[np.uint64]]
    crc32: Mapping[str, npt.NDArray[np.uint32]]

    @property
    def num_samples(self) -> int:
        return len(self.labels)


@dataclass(kw_only=True)
class IndexWriter:
    """Writes an index whose totals are known up front, one shard's part at a time.

    Memory stays independent of the dataset's size: the file is memory-mapped and each part is
    copied into its slice. The file appears under its final name only on `close()`.
    """

    path: Path
    num_samples: int
    num_shards: int
    fields: Sequence[str]
    key_blob_size: int
    source_blob_size: int
    version: int = 1  # `formats.version_for(schema)`
    _layout: dict[str, tuple[str, int, int]] = field(init=False, default_factory=dict)
    _map: np.memmap[tuple[int], np.dtype[np.uint8]] | None = field(init=False, default=None)
    _rows: int = field(init=False, default=0)
    _key_bytes: int = field(init=False, default=0)
    _source_bytes: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.version not in SUPPORTED_VERSIONS:
            raise ValueError(f"{self.path}: cannot write index version {self.version}")
        dtypes = section_dtypes(self.version, self.fields)
        position = align(HEADER_SIZE + ENTRY_SIZE * len(dtypes))
        for name, dtype in dtypes.items():
            count = expected_count(name, self.num_samples)
            if count is None:
                count = self.key_blob_size if name == "key.blob" else self.source_blob_size
            self._layout[name] = (dtype, position, count)
            position = align(position + count * np.dtype(dtype).itemsize)
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        self._map = np.memmap(self._tmp, dtype=np.uint8, mode="w+", shape=(position,))
        self._write_header(position)
        self.section("key.offsets")[0] = 0
        self.section("source.offsets")[0] = 0

    def _write_header(self, file_size: int) -> None:
        if self._map is None:
            raise ValueError(f"{self.path}: index writer is closed")
        header = HEADER_STRUCT.pack(
            INDEX_MAGIC,
            self.version,
            HEADER_SIZE,
            self.num_samples,
            self.num_shards,
            len(self._layout),
            file_size,
            b"",
        )
        self._map[:HEADER_SIZE] = np.frombuffer(header, dtype=np.uint8)
        at = HEADER_SIZE
        for name, (dtype, offset, count) in self._layout.items():
            entry = ENTRY_STRUCT.pack(name.encode("ascii"), dtype.encode("ascii"), offset, count)
            self._map[at : at + ENTRY_SIZE] = np.frombuffer(entry, dtype=np.uint8)
            at += ENTRY_SIZE

    def section(self, name: str) -> AnyArray:
        if self._map is None:
            raise ValueError(f"{self.path}: index writer is closed")
        dtype, offset, count = self._layout[name]
        nbytes = count * np.dtype(dtype).itemsize
        return self._map[offset : offset + nbytes].view(dtype)

    def append(self, part: IndexPart) -> None:
        n, r = part.num_samples, self._rows
        if r + n > self.num_samples:
            raise CorruptIndexError(
                f"{self.path}: shard {part.shard} brings the index to {r + n} samples, "
                f"more than the {self.num_samples} announced"
            )
        self.section("shard")[r : r + n] = part.shard
        self.section("label")[r : r + n] = part.labels
        for k, f in enumerate(self.fields):
            stem = field_section_stem(self.version, k, f)
            self.section(f"{stem}.offset")[r : r + n] = part.offsets[f]
            self.section(f"{stem}.size")[r : r + n] = part.sizes[f]
            self.section(f"{stem}.crc32")[r : r + n] = part.crc32[f]
        self._key_bytes = self._append_strings(
            "key", part.key_blob, part.key_offsets, r, self._key_bytes
        )
        self._source_bytes = self._append_strings(
            "source", part.source_blob, part.source_offsets, r, self._source_bytes
        )
        self._rows += n

    def _append_strings(
        self,
        name: str,
        blob: npt.NDArray[np.uint8],
        offsets: npt.NDArray[np.uint64],
        row: int,
        used: int,
    ) -> int:
        n = len(offsets) - 1
        self.section(f"{name}.blob")[used : used + len(blob)] = blob
        self.section(f"{name}.offsets")[row + 1 : row + n + 1] = offsets[1:] + np.uint64(used)
        return used + len(blob)

    def close(self) -> None:
        """Check the totals, flush, and rename the file into place."""
        if self._map is None:
            return
        if (self._rows, self._key_bytes, self._source_bytes) != (
            self.num_samples,
            self.key_blob_size,
            self.source_blob_size,
        ):
            self.discard()
            raise CorruptIndexError(
                f"{self.path}: wrote {self._rows} samples, {self._key_bytes} key bytes and "
                f"{self._source_bytes} source bytes; announced {self.num_samples}, "
                f"{self.key_blob_size} and {self.source_blob_size}"
            )
        self._map.flush()
        self._map = None
        os.replace(self._tmp, self.path)

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()

    def discard(self) -> None:
        """Drop the unfinished file."""
        self._map = None
        self._tmp.unlink(missing_ok=True)
