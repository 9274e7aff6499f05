"""The records of one TFRecord file, read once from the front, both CRCs checked
(formats/SPEC.md section 4.2); and where an Example's int64 label value lies in its bytes.

A record whose data CRC does not match is a `RecordFault` and the next record is read; a length
CRC that does not match, or a file that ends inside a record, is a fault that ends the scan (the
framing after it cannot be trusted).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from fastpack.formats.tfrecord import FOOTER_BYTES, HEADER_BYTES, masked_crc32c

_EXAMPLE_FEATURES = 1  # Example.features; Features.feature (a map entry); Feature.int64_list
_ENTRY_KEY, _ENTRY_VALUE = 1, 2
_INT64_LIST = 3
_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_MORE = 0x80
_VARINT_BITS = 70  # ten 7-bit groups at most


@dataclass(frozen=True, slots=True)
class Record:
    """A record: its number in the file, its first byte, where its data starts, its data."""

    number: int
    offset: int
    data_offset: int
    data: bytes

    @property
    def size(self) -> int:
        """The whole record's length, framing included."""
        return HEADER_BYTES + len(self.data) + FOOTER_BYTES


@dataclass(frozen=True, slots=True)
class RecordFault:
    """A record that cannot be used: its number, offset, why, and whether the scan ends."""

    number: int
    offset: int
    reason: str
    final: bool


def _read(file: BinaryIO, size: int) -> bytes:
    data = file.read(size)
    return data if data is not None else b""


def file_records(file: BinaryIO) -> Iterator[Record | RecordFault]:
    """Every record of the TFRecord file `file`, in order (see the module's docstring)."""
    offset = number = 0
    while True:
        header = _read(file, HEADER_BYTES)
        if not header:
            return
        if len(header) < HEADER_BYTES:
            reason = f"cut off: {len(header)} bytes left, a record header needs {HEADER_BYTES}"
            yield RecordFault(number, offset, reason, final=True)
            return
        (length,) = struct.unpack_from("<Q", header)
        (length_crc,) = struct.unpack_from("<I", header, 8)
        if masked_crc32c(header[:8]) != length_crc:
            yield RecordFault(number, offset, "length CRC mismatch", final=True)
            return
        body = _read(file, length + FOOTER_BYTES)
        if len(body) < length + FOOTER_BYTES:
            end = offset + HEADER_BYTES + len(body)
            reason = f"cut off at byte {end}, inside the record (it needs {length} data bytes)"
            yield RecordFault(number, offset, reason, final=True)
            return
        data = body[:length]
        (data_crc,) = struct.unpack_from("<I", body, length)
        if masked_crc32c(data) != data_crc:
            yield RecordFault(number, offset, "data CRC mismatch", final=False)
        else:
            yield Record(number, offset, offset + HEADER_BYTES, data)
        offset += HEADER_BYTES + length + FOOTER_BYTES
        number += 1


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end and shift < _VARINT_BITS:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < _MORE:
            return value, pos
        shift += 7
    raise ValueError("a varint runs past its message")


def _fields(data: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """`(number, wire, start, stop)` of each field of the message in `data[pos:end]`: the
    payload of a length-delimited field, the bytes of a varint."""
    while pos < end:
        tag, pos = _varint(data, pos, end)
        number, wire = tag >> 3, tag & 7
        start = pos
        if wire == _VARINT:
            pos = _varint(data, pos, end)[1]
        elif wire == _LEN:
            size, start = _varint(data, pos, end)
            pos = start + size
        elif wire in (_FIXED64, _FIXED32):
            pos += 8 if wire == _FIXED64 else 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > end:
            raise ValueError("a field runs past its message")
        yield number, wire, start, pos


def label_span(data: bytes, name: str) -> tuple[int, int] | None:
    """`(offset, size)` in `data` (one Example) of the varint of the one value of the int64
    feature `name`, or None when it does not hold exactly one (the last entry of that name
    wins, as protobuf's map merge does)."""
    key = name.encode("utf-8")
    found: tuple[int, int] | None = None
    try:
        for number, wire, lo, hi in _fields(data, 0, len(data)):
            if number != _EXAMPLE_FEATURES or wire != _LEN:
                continue
            for n, w, a, b in _fields(data, lo, hi):
                if n != 1 or w != _LEN:
                    continue
                entry = {k: (ka, kb) for k, kw, ka, kb in _fields(data, a, b) if kw == _LEN}
                ka, kb = entry.get(_ENTRY_KEY, (0, 0))
                if data[ka:kb] != key or _ENTRY_VALUE not in entry:
                    continue
                found = _one_int64(data, *entry[_ENTRY_VALUE])
    except ValueError:
        return None
    return found


def _one_int64(data: bytes, lo: int, hi: int) -> tuple[int, int] | None:
    """The span of the one varint in the Feature message `data[lo:hi]`'s int64 list."""
    spans: list[tuple[int, int]] = []
    for number, wire, a, b in _fields(data, lo, hi):
        if number != _INT64_LIST or wire != _LEN:
            continue
        for n, w, va, vb in _fields(data, a, b):
            if n != 1:
                continue
            if w == _VARINT:
                spans.append((va, vb - va))
            elif w == _LEN:  # packed
                pos = va
                while pos < vb:
                    start, pos = pos, _varint(data, pos, vb)[1]
                    spans.append((start, pos - start))
    return spans[0] if len(spans) == 1 else None
