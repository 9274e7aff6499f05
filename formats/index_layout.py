"""The layout of `index.fpx` (formats/SPEC.md section 3): its magic, header and section-table
entries, the sections each version has and their dtypes, and where a section's bytes lie. The
writer (`index_writer`) and the reader (`index`) both follow it."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

INDEX_MAGIC = b"\x89FPX\r\n\x1a\n"
# `<f>.offset` of a member an optional field lacks (version 2); its size and crc32 are 0
ABSENT = 2**64 - 1
HEADER_SIZE = 64
ENTRY_SIZE = 48
ALIGN = 64
HEADER_STRUCT = struct.Struct("<8sIIQIIQ24s")
ENTRY_STRUCT = struct.Struct("<24s8sQQ")

# Section name -> dtype for the fixed sections; per-field sections follow FIELD_SECTIONS.
FIXED_SECTIONS: dict[str, str] = {
    "shard": "<u4",
    "label": "<i8",
    "key.offsets": "<u8",
    "key.blob": "|u1",
    "source.offsets": "<u8",
    "source.blob": "|u1",
}
FIELD_SECTIONS: dict[str, str] = {"offset": "<u8", "size": "<u8", "crc32": "<u4"}

AnyArray = npt.NDArray[np.generic]

# The only dtype strings SPEC allows; the reader never parses any other string as a dtype.
DTYPES: dict[str, np.dtype[Any]] = {s: np.dtype(s) for s in ("<u4", "<u8", "<i8", "|u1")}
# What a section name or dtype string may hold before its NUL padding: ASCII 0x21-0x7E.
_PRINTABLE = bytes(range(0x21, 0x7F))


def padded_ascii(data: bytes) -> str | None:
    """`data` without its NUL padding if what is left is non-empty printable ASCII, else None."""
    text = data.rstrip(b"\0")
    if text and not text.translate(None, _PRINTABLE):
        return text.decode("ascii")
    return None


def field_section_stem(version: int, position: int, name: str) -> str:
    """What a field's sections are named after: its name (v1), `f<position>` (v2)."""
    return name if version == 1 else f"f{position}"


def section_dtypes(version: int, fields: Sequence[str]) -> dict[str, str]:
    """The dtype of every section a version-`version` index of `fields` has, by name."""
    dtypes = dict(FIXED_SECTIONS)
    for k, f in enumerate(fields):
        for suffix, dtype in FIELD_SECTIONS.items():
            dtypes[f"{field_section_stem(version, k, f)}.{suffix}"] = dtype
    return dtypes


def expected_count(name: str, num_samples: int) -> int | None:
    """Element count a section must have; None for blobs (any length)."""
    if name.endswith(".blob"):
        return None
    if name.endswith(".offsets"):
        return num_samples + 1
    return num_samples


def align(n: int) -> int:
    """`n` rounded up to a multiple of ALIGN: where the next section may start."""
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
    sections: int = HEADER_STRUCT.unpack_from(header)[5]
    return HEADER_SIZE + ENTRY_SIZE * sections


def section_table(head: bytes) -> dict[str, Section]:
    """The sections listed in `head` (header and section table) that have a well-formed name and
    a SPEC dtype, unchecked otherwise: opening the file with `Index` checks them against SPEC."""
    sections: dict[str, Section] = {}
    for at in range(HEADER_SIZE, min(len(head), table_size(head)) - ENTRY_SIZE + 1, ENTRY_SIZE):
        name_b, dtype_b, offset, elements = ENTRY_STRUCT.unpack_from(head, at)
        name, dtype = padded_ascii(name_b), padded_ascii(dtype_b)
        if name is not None and dtype is not None and dtype in DTYPES:
            sections.setdefault(name, Section(DTYPES[dtype], offset, elements))
    return sections
