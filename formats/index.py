"""`index.fpx`: the binary, memory-mapped sample index (formats/SPEC.md section 3)."""

from __future__ import annotations

import itertools
import mmap
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

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

MAGIC = b"\x89FPX\r\n\x1a\n"
VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
# `<f>.offset` of a member an optional field lacks (version 2); its size and crc32 are 0
ABSENT = 2**64 - 1
HEADER_SIZE = 64
ENTRY_SIZE = 48
ALIGN = 64
_HEADER = struct.Struct("<8sIIQIIQ24s")
_ENTRY = struct.Struct("<24s8sQQ")

# Section name -> dtype for the fixed sections; per-field sections follow _FIELD_SECTIONS.
_FIXED_SECTIONS: dict[str, str] = {
    "shard": "<u4",
    "label": "<i8",
    "key.offsets": "<u8",
    "key.blob": "|u1",
    "source.offsets": "<u8",
    "source.blob": "|u1",
}
_FIELD_SECTIONS: dict[str, str] = {"offset": "<u8", "size": "<u8", "crc32": "<u4"}

AnyArray = npt.NDArray[np.generic]

# The only dtype strings SPEC allows; the reader never parses any other string as a dtype.
_DTYPES: dict[str, np.dtype[Any]] = {s: np.dtype(s) for s in ("<u4", "<u8", "<i8", "|u1")}
# Bytes each sample takes at least in `shard`, `label`, `key.offsets` and `source.offsets`.
_MIN_BYTES_PER_SAMPLE = 4 + 8 + 8 + 8
# What a section name or dtype string may hold before its NUL padding: ASCII 0x21-0x7E.
_PRINTABLE = bytes(range(0x21, 0x7F))


class _Entry(NamedTuple):
    """One row of the section table, as read."""

    position: int
    dtype: str
    offset: int
    elements: int


def _padded_ascii(data: bytes) -> str | None:
    """`data` without its NUL padding if what is left is non-empty printable ASCII, else None."""
    text = data.rstrip(b"\0")
    if text and not text.translate(None, _PRINTABLE):
        return text.decode("ascii")
    return None


def field_section_stem(version: int, position: int, name: str) -> str:
    """What a field's sections are named after: its name (v1), `f<position>` (v2)."""
    return name if version == 1 else f"f{position}"


def _section_dtypes(version: int, fields: Sequence[str]) -> dict[str, str]:
    dtypes = dict(_FIXED_SECTIONS)
    for k, f in enumerate(fields):
        for suffix, dtype in _FIELD_SECTIONS.items():
            dtypes[f"{field_section_stem(version, k, f)}.{suffix}"] = dtype
    return dtypes


def _expected_count(name: str, num_samples: int) -> int | None:
    """Element count a section must have; None for blobs (any length)."""
    if name.endswith(".blob"):
        return None
    if name.endswith(".offsets"):
        return num_samples + 1
    return num_samples


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class Section(NamedTuple):
    """Where one section's bytes lie, as the section table lists them."""

    dtype: np.dtype[Any]
    offset: int
    elements: int

    def span(self, first: int, stop: int) -> tuple[int, int]:
        """Bytes `[start, end)` of the file that hold elements `[first, stop)`."""
        size = self.dtype.itemsize
        return self.offset + first * size, self.offset + stop * size


def table_size(header: bytes) -> int:
    """Bytes of the header and section table, from the index's first 64 bytes (unchecked)."""
    if len(header) < HEADER_SIZE:
        return HEADER_SIZE
    sections: int = _HEADER.unpack_from(header)[5]
    return HEADER_SIZE + ENTRY_SIZE * sections


def section_table(head: bytes) -> dict[str, Section]:
    """The sections listed in `head` (header and section table) that have a well-formed name and
    a SPEC dtype, unchecked otherwise: opening the file with `Index` checks them against SPEC."""
    sections: dict[str, Section] = {}
    for at in range(HEADER_SIZE, min(len(head), table_size(head)) - ENTRY_SIZE + 1, ENTRY_SIZE):
        name_b, dtype_b, offset, elements = _ENTRY.unpack_from(head, at)
        name, dtype = _padded_ascii(name_b), _padded_ascii(dtype_b)
        if name is not None and dtype is not None and dtype in _DTYPES:
            sections.setdefault(name, Section(_DTYPES[dtype], offset, elements))
    return sections


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
        dtypes = _section_dtypes(self.version, self.fields)
        position = _align(HEADER_SIZE + ENTRY_SIZE * len(dtypes))
        for name, dtype in dtypes.items():
            count = _expected_count(name, self.num_samples)
            if count is None:
                count = self.key_blob_size if name == "key.blob" else self.source_blob_size
            self._layout[name] = (dtype, position, count)
            position = _align(position + count * np.dtype(dtype).itemsize)
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        self._map = np.memmap(self._tmp, dtype=np.uint8, mode="w+", shape=(position,))
        self._write_header(position)
        self.section("key.offsets")[0] = 0
        self.section("source.offsets")[0] = 0

    def _write_header(self, file_size: int) -> None:
        if self._map is None:
            raise ValueError(f"{self.path}: index writer is closed")
        header = _HEADER.pack(
            MAGIC,
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
            entry = _ENTRY.pack(name.encode("ascii"), dtype.encode("ascii"), offset, count)
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
        magic, version, header_size, n, shards, sections, file_size, reserved = _HEADER.unpack_from(
            self._mmap
        )
        if magic != MAGIC:
            raise BadMagicError(f"{self.path}: bad magic {magic!r}, expected {MAGIC!r}")
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
            name_b, dtype_b, offset, n = _ENTRY.unpack_from(
                self._mmap, HEADER_SIZE + i * ENTRY_SIZE
            )
            name = _padded_ascii(name_b)
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
            dtype = _padded_ascii(dtype_b)
            if dtype is None or dtype not in _DTYPES:
                found = dtype_b.rstrip(b"\0").decode("ascii", "backslashreplace")
                spec = _FIXED_SECTIONS.get(name) or _FIELD_SECTIONS.get(name.rpartition(".")[2])
                raise CorruptIndexError(
                    f"{self.path}: section {name!r} has dtype {found!r}, expected "
                    f"{spec or 'one of ' + ', '.join(_DTYPES)}"
                )
            table[name] = _Entry(i, dtype, offset, n)
        return table

    def _check_names(self, table: Mapping[str, _Entry]) -> dict[str, str]:
        """Check that `table` holds exactly the sections SPEC requires; their dtypes by name."""
        expected = _section_dtypes(self.version, list(self._stems.values()))
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
            count = _expected_count(name, self.num_samples)
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
            dtype = _DTYPES[entry.dtype]
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
