"""`index.fpx`: the binary, memory-mapped sample index (formats/SPEC.md section 3), read and
checked (`Index`); its layout is in `index_layout`, its writer in `index_writer`."""

from __future__ import annotations

import itertools
import mmap
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from .errors import (
    AbsentFieldError,
    BadMagicError,
    CorruptIndexError,
    DatasetNotFoundError,
    OffsetOutOfRangeError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from .index_layout import (
    ABSENT,
    ALIGN,
    DTYPES,
    ENTRY_SIZE,
    ENTRY_STRUCT,
    FIELD_SECTIONS,
    FIXED_SECTIONS,
    HEADER_SIZE,
    HEADER_STRUCT,
    INDEX_MAGIC,
    AnyArray,
    expected_count,
    padded_ascii,
    section_dtypes,
)
from .layout import SUPPORTED_VERSIONS

# Bytes each sample takes at least in `shard`, `label`, `key.offsets` and `source.offsets`.
_MIN_BYTES_PER_SAMPLE = 4 + 8 + 8 + 8


class _Entry(NamedTuple):
    """One row of the section table, as read."""

    position: int
    dtype: str
    offset: int
    elements: int


class Index:
    """A read-only, memory-mapped `index.fpx`. Opening it costs O(1) time and memory.

    Opening checks the header and every section entry against formats/SPEC.md section 3 before
    viewing a section; `key`, `source` and `locate` check the entries they read. Whatever the
    bytes, the errors are `FastpackError`s.

    Its pages belong to the page cache and are shared by every process that maps the file. A
    page fault maps 64 KiB to 2 MiB around the page it needs, so random reads of a large index
    would soon map most of it into each reader: `release` unmaps them from this process.
    """

    def __init__(
        self, path: str | os.PathLike[str], field_names: Sequence[str] | None = None
    ) -> None:
        """`field_names`: the schema's names of a version-2 index's fields `f0, f1, ...`
        (default: those stems); a version-1 index names its fields itself."""
        self.path = Path(path)
        try:
            file = self.path.open("rb")
        except FileNotFoundError as e:
            raise DatasetNotFoundError(f"{self.path}: index file not found") from e
        with file:
            size = os.fstat(file.fileno()).st_size
            if size < HEADER_SIZE:
                raise TruncatedFileError(
                    f"{self.path}: {size} bytes, shorter than the {HEADER_SIZE}-byte header"
                )
            self._mmap = mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ)
        self.num_samples: int
        self.num_shards: int
        self.version, self.num_samples, self.num_shards, num_sections = self._read_header(size)
        table = self._read_table(num_sections)
        stems = tuple(name[: -len(".offset")] for name in table if name.endswith(".offset"))
        if self.version == 1:
            self.fields: tuple[str, ...] = stems
        else:
            stems = tuple(f"f{k}" for k in range(len(stems)))
            self.fields = stems if field_names is None else tuple(field_names)
            if len(self.fields) != len(stems):
                raise CorruptIndexError(
                    f"{self.path}: {len(stems)} fields in the index, the schema has "
                    f"{len(self.fields)} ({', '.join(self.fields)})"
                )
        self._stems = dict(zip(self.fields, stems, strict=True))
        self._sections = self._map_sections(table, size)
        self.shard = self._sections["shard"]
        self.label = self._sections["label"]
        self._key_blob: npt.NDArray[np.uint8] = self._sections["key.blob"]  # type: ignore[assignment]
        self._key_offsets: npt.NDArray[np.uint64] = self._sections["key.offsets"]  # type: ignore[assignment]
        self._source_blob: npt.NDArray[np.uint8] = self._sections["source.blob"]  # type: ignore[assignment]
        self._source_offsets: npt.NDArray[np.uint64] = self._sections["source.offsets"]  # type: ignore[assignment]
        for name in ("key", "source"):
            offsets, blob = self._sections[f"{name}.offsets"], self._sections[f"{name}.blob"]
            first, last = int(offsets[0]), int(offsets[-1])
            if (first, last) != (0, len(blob)):
                raise CorruptIndexError(
                    f"{self.path}: section '{name}.offsets' runs from {first} to {last}, "
                    f"expected 0 to {len(blob)} (the size of '{name}.blob')"
                )

    def release(self) -> None:
        """Unmap the pages read so far from this process (`MADV_DONTNEED`); arrays and views
        stay valid, a later read maps its page again (its cost: benchmarks/readers/COSTS.md)."""
        self._mmap.madvise(mmap.MADV_DONTNEED)

    def _read_header(self, size: int) -> tuple[int, int, int, int]:
        """Check the header against SPEC and the file's `size`;
        `(version, samples, shards, sections)`."""
        magic, version, header_size, n, shards, sections, file_size, reserved = (
            HEADER_STRUCT.unpack_from(self._mmap)
        )
        if magic != INDEX_MAGIC:
            raise BadMagicError(f"{self.path}: bad magic {magic!r}, expected {INDEX_MAGIC!r}")
        if version not in SUPPORTED_VERSIONS:
            raise UnsupportedVersionError(
                f"{self.path}: index version {version}, this reader supports {SUPPORTED_VERSIONS}"
            )
        if header_size != HEADER_SIZE:
            raise CorruptIndexError(
                f"{self.path}: header_size {header_size}, expected {HEADER_SIZE}"
            )
        if file_size > size:
            raise TruncatedFileError(f"{self.path}: {size} bytes, the header promises {file_size}")
        if file_size < size:
            raise CorruptIndexError(
                f"{self.path}: {size} bytes, the header's file_size is {file_size}"
            )
        if any(reserved):
            raise CorruptIndexError(
                f"{self.path}: reserved header bytes 40-63 are {reserved.hex()}, expected zeros"
            )
        table_end = HEADER_SIZE + ENTRY_SIZE * sections
        if table_end > size:
            raise TruncatedFileError(
                f"{self.path}: section table of {sections} entries needs {table_end} bytes, "
                f"file has {size}"
            )
        needed = table_end + _MIN_BYTES_PER_SAMPLE * n + 16
        if needed > size:
            raise CorruptIndexError(
                f"{self.path}: header says {n} samples, whose required sections need at least "
                f"{needed} bytes; file has {size}"
            )
        if n and not shards:
            raise CorruptIndexError(f"{self.path}: header says {n} samples in 0 shards")
        return version, n, shards, sections

    def _read_table(self, count: int) -> dict[str, _Entry]:
        """The `count` section entries by name, each with a well-formed name and a SPEC dtype."""
        table: dict[str, _Entry] = {}
        for i in range(count):
            name_b, dtype_b, offset, n = ENTRY_STRUCT.unpack_from(
                self._mmap, HEADER_SIZE + i * ENTRY_SIZE
            )
            name = padded_ascii(name_b)
            if name is None:
                raise CorruptIndexError(
                    f"{self.path}: section table entry {i} has name {name_b!r}, expected "
                    f"printable ASCII padded with NULs"
                )
            if name in table:
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} appears twice (entries {table[name].position} "
                    f"and {i})"
                )
            dtype = padded_ascii(dtype_b)
            if dtype is None or dtype not in DTYPES:
                found = dtype_b.rstrip(b"\0").decode("ascii", "backslashreplace")
                spec = FIXED_SECTIONS.get(name) or FIELD_SECTIONS.get(name.rpartition(".")[2])
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} has dtype {found!r}, expected "
                    f"{spec or 'one of ' + ', '.join(DTYPES)}"
                )
            table[name] = _Entry(i, dtype, offset, n)
        return table

    def _check_names(self, table: Mapping[str, _Entry]) -> dict[str, str]:
        """Check that `table` holds exactly the sections SPEC requires; their dtypes by name."""
        expected = section_dtypes(self.version, list(self._stems.values()))
        for name in expected:
            if name not in table:
                raise CorruptIndexError(f"{self.path}: required section {name!r} is missing")
        for name in table:
            if name not in expected:
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} is not a version {self.version} section "
                    f"(fields {self.fields})"
                )
        return expected

    def _map_sections(self, table: Mapping[str, _Entry], size: int) -> dict[str, AnyArray]:
        """View each section after checking its name, dtype, count and extent against SPEC."""
        expected = self._check_names(table)
        table_end = HEADER_SIZE + ENTRY_SIZE * len(table)
        raw: npt.NDArray[np.uint8] = np.frombuffer(self._mmap, dtype=np.uint8)
        sections: dict[str, AnyArray] = {}
        extents: list[tuple[int, int, str]] = []
        for name, entry in table.items():
            if entry.dtype != expected[name]:
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} has dtype {entry.dtype}, "
                    f"expected {expected[name]}"
                )
            count = expected_count(name, self.num_samples)
            if count is not None and entry.elements != count:
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} has {entry.elements} elements, expected {count}"
                )
            if entry.offset % ALIGN:
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} starts at byte {entry.offset}, not a "
                    f"multiple of {ALIGN}"
                )
            if entry.offset < table_end:
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} starts at byte {entry.offset}, inside the "
                    f"header and section table (bytes [0, {table_end}))"
                )
            dtype = DTYPES[entry.dtype]
            end = entry.offset + entry.elements * dtype.itemsize  # Python ints: no overflow
            if end > size:
                raise TruncatedFileError(
                    f"{self.path}: section {name!r} ends at byte {end}, file has {size}"
                )
            sections[name] = raw[entry.offset : end].view(dtype)
            if end > entry.offset:
                extents.append((entry.offset, end, name))
        extents.sort()
        for (_, end, name), (start, _, other) in itertools.pairwise(extents):
            if start < end:
                raise CorruptIndexError(
                    f"{self.path}: section {other!r} starts at byte {start}, inside section "
                    f"{name!r} (which ends at byte {end})"
                )
        return sections

    def __len__(self) -> int:
        return self.num_samples

    def offsets(self, field_name: str) -> npt.NDArray[np.uint64]:
        return self._field_section(field_name, "offset")  # type: ignore[return-value]

    def sizes(self, field_name: str) -> npt.NDArray[np.uint64]:
        return self._field_section(field_name, "size")  # type: ignore[return-value]

    def crc32(self, field_name: str) -> npt.NDArray[np.uint32]:
        return self._field_section(field_name, "crc32")  # type: ignore[return-value]

    def _field_section(self, field_name: str, suffix: str) -> AnyArray:
        if field_name not in self.fields:
            raise KeyError(f"{self.path}: no field {field_name!r}; fields are {self.fields}")
        return self._sections[f"{self._stems[field_name]}.{suffix}"]

    def present(self, field_name: str) -> npt.NDArray[np.bool_]:
        """Which samples hold a member of `field_name` (all, but for optional v2 fields)."""
        present: npt.NDArray[np.bool_] = self.offsets(field_name) != np.uint64(ABSENT)
        return present

    def string_table(self, name: str) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint64]]:
        """`(blob, offsets)` of the `key` or `source` strings, for a scan of every sample at
        once: string `i` is `blob[offsets[i]:offsets[i + 1]]`, UTF-8 (unchecked). Checks in
        one pass that the offsets do not decrease."""
        if name not in ("key", "source"):
            raise KeyError(f"{self.path}: no string table {name!r}; there are 'key' and 'source'")
        blob: npt.NDArray[np.uint8] = self._sections[f"{name}.blob"]  # type: ignore[assignment]
        offsets: npt.NDArray[np.uint64] = self._sections[f"{name}.offsets"]  # type: ignore[assignment]
        back = np.flatnonzero(offsets[1:] < offsets[:-1])
        if back.size:
            i = int(back[0])
            raise CorruptIndexError(
                f"{self.path}: section '{name}.offsets' gives sample {i} bytes "
                f"[{int(offsets[i])}, {int(offsets[i + 1])}), expected a non-decreasing range"
            )
        return blob, offsets

    def key(self, i: int) -> str:
        """The key of sample `i`."""
        return self._string("key", self._key_blob, self._key_offsets, i)

    def source(self, i: int) -> str:
        """The source path of sample `i`."""
        return self._string("source", self._source_blob, self._source_offsets, i)

    def _string(
        self,
        name: str,
        blob: npt.NDArray[np.uint8],
        offsets: npt.NDArray[np.uint64],
        i: int,
    ) -> str:
        i = self._check_sample(i)
        start, end = int(offsets[i]), int(offsets[i + 1])
        if not start <= end <= len(blob):
            raise CorruptIndexError(
                f"{self.path}: section '{name}.offsets' gives sample {i} bytes [{start}, {end}), "
                f"expected a range inside the {len(blob)} bytes of '{name}.blob'"
            )
        try:
            return bytes(blob[start:end]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptIndexError(
                f"{self.path}: section '{name}.blob' bytes [{start}, {end}) of sample {i} are "
                f"not UTF-8 ({e.reason} at byte {start + e.start})"
            ) from e

    def _check_sample(self, i: int) -> int:
        if not 0 <= i < self.num_samples:
            raise IndexError(f"{self.path}: sample {i} out of range [0, {self.num_samples})")
        return i

    def locate(self, i: int, field_name: str, shard_size: int) -> tuple[int, int, int]:
        """`(shard, offset, size)` of sample `i`'s member `field_name`, checked against the
        header's shard count and the shard's byte size."""
        shard = int(self.shard[self._check_sample(i)])
        if shard >= self.num_shards:
            raise CorruptIndexError(
                f"{self.path}: sample {i} is in shard {shard}, the header counts "
                f"{self.num_shards} shards"
            )
        offset = int(self.offsets(field_name)[i])
        size = int(self.sizes(field_name)[i])
        if offset == ABSENT and self.version > 1:
            raise AbsentFieldError(
                f"{self.path}: sample {i} has no {field_name!r} member (an optional field)"
            )
        if offset + size > shard_size:
            raise OffsetOutOfRangeError(
                f"{self.path}: sample {i} field {field_name!r} spans bytes "
                f"[{offset}, {offset + size}) of shard {shard}, which has {shard_size} bytes"
            )
        return shard, offset, size
