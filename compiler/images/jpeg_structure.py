"""The marker structure of a JPEG, checked without decoding pixels (formats/SPEC.md section 6).

A JPEG is SOI, then marker segments (each `FF xx` + a big-endian length that counts itself) up to
one frame header (SOF), then one or more scans (SOS segment + entropy-coded data, which may hold
`FF 00` stuffing and `FF D0`-`FF D7` restart markers, with tables and comments allowed between
scans), then EOI. Bytes after the EOI are ignored, as every decoder ignores them.

This catches empty, truncated and header-damaged files, and garbage where a scan should be. It
does not check the entropy-coded data itself (a strict decode does): the scan data is searched
for markers by a regular expression (in C), never walked byte by byte in Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastpack.formats import FastpackError
from fastpack.formats.image_header import JPEG_SIGNATURE, MAX_SEGMENTS

_EOI, _SOS, _TEM = 0xD9, 0xDA, 0x01
_DHT, _DAC, _DQT, _DNL, _DRI, _COM = 0xC4, 0xCC, 0xDB, 0xDC, 0xDD, 0xFE
_APPN = frozenset(range(0xE0, 0xF0))
_FRAME = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_TABLES = frozenset({_DHT, _DAC, _DQT, _DRI, _COM, *_APPN})  # allowed before and between scans
_BETWEEN_SCANS = _TABLES | {_SOS, _DNL}
# A marker in or between scans: 0xFF, then anything but 0x00 (stuffing), 0xD0-0xD7 (restart
# markers, part of the scan) or 0xFF (fill: the marker is the next 0xFF). re searches in C.
_SCAN_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")
_FILLS = re.compile(rb"\xff+")
_MAX_COMPONENTS, _MAX_SCAN_COMPONENTS = 4, 4
_PRECISIONS = frozenset({8, 12, 16})  # 16: lossless (SOF3) only, as libjpeg-turbo reads
_LENGTH_BYTES = 2  # a segment's big-endian length, which counts these two bytes
# length, precision, height, width, component count; then 3 bytes per component
_FRAME_HEADER_BYTES = 8


class JpegStructureError(FastpackError, ValueError):
    """A JPEG whose marker structure is broken; the message says what and at which offset."""


@dataclass(frozen=True, kw_only=True, slots=True)
class JpegFrame:
    """The frame header (SOF segment)."""

    marker: int  # the SOF marker code: 0xC0 baseline, 0xC2 progressive, ...
    height: int
    width: int
    components: int


@dataclass(frozen=True, kw_only=True, slots=True)
class JpegStructure:
    frame: JpegFrame
    scans: int
    end: int  # offset just past the EOI marker; bytes from here on are ignored


def _name(code: int) -> str:
    return f"FF{code:02X}"


def _segment_end(data: bytes, at: int, code: int) -> int:
    """The offset just past the segment whose marker is at `at`; its length must fit the file."""
    if at + 4 > len(data):
        raise JpegStructureError(
            f"truncated: the {_name(code)} segment at offset {at} has no length (the file ends "
            f"at byte {len(data)})"
        )
    length = int.from_bytes(data[at + 2 : at + 4], "big")
    if length < _LENGTH_BYTES:
        raise JpegStructureError(f"the {_name(code)} segment at offset {at} has length {length}")
    if at + 2 + length > len(data):
        raise JpegStructureError(
            f"truncated: the {_name(code)} segment at offset {at} needs {length} bytes, the file "
            f"ends at byte {len(data)}"
        )
    return at + 2 + length


def _parse_frame(data: bytes, at: int, code: int) -> JpegFrame:
    """The SOF segment at `at`: precision, a non-zero size, 1-4 components, a matching length."""
    length = int.from_bytes(data[at + 2 : at + 4], "big")
    if length < _FRAME_HEADER_BYTES:
        raise JpegStructureError(
            f"the frame header at offset {at} is {length} bytes, under {_FRAME_HEADER_BYTES}"
        )
    precision, height, width, components = (
        data[at + 4],
        int.from_bytes(data[at + 5 : at + 7], "big"),
        int.from_bytes(data[at + 7 : at + 9], "big"),
        data[at + 9],
    )
    problem = ""
    if precision not in _PRECISIONS:
        problem = f"a sample precision of {precision} bits"
    elif height == 0 or width == 0:
        problem = f"a size of {width} x {height} pixels"
    elif not 1 <= components <= _MAX_COMPONENTS:
        problem = f"{components} components"
    elif length != (expected := _FRAME_HEADER_BYTES + 3 * components):
        problem = f"length {length} for {components} components (expected {expected})"
    if problem:
        raise JpegStructureError(f"the frame header ({_name(code)}) at offset {at} gives {problem}")
    return JpegFrame(marker=code, height=height, width=width, components=components)


def _check_scan_header(data: bytes, at: int, frame: JpegFrame) -> None:
    """The SOS segment at `at`: 1-4 components (no more than the frame's), a matching length."""
    length = int.from_bytes(data[at + 2 : at + 4], "big")
    count = data[at + 4] if length >= _LENGTH_BYTES + 1 else 0
    if not 1 <= count <= min(_MAX_SCAN_COMPONENTS, frame.components):
        raise JpegStructureError(
            f"the scan header at offset {at} names {count} components (the frame has "
            f"{frame.components})"
        )
    if length != 6 + 2 * count:
        raise JpegStructureError(
            f"the scan header at offset {at} has length {length} for {count} components "
            f"(expected {6 + 2 * count})"
        )


def _next_marker(data: bytes, pos: int) -> tuple[int, int]:
    """`(offset, code)` of the marker at `pos`, after any fill bytes; between segments."""
    if pos >= len(data):
        raise JpegStructureError(
            f"truncated: no scan (SOS) before the end of the file at byte {len(data)}"
        )
    fills = _FILLS.match(data, pos)
    if fills is None:
        raise JpegStructureError(f"expected a marker at offset {pos}, found byte 0x{data[pos]:02X}")
    pos = fills.end() - 1  # the last 0xFF of a run of fill bytes starts the marker
    if pos + 1 >= len(data):
        raise JpegStructureError(f"truncated: the file ends in a marker at offset {pos}")
    return pos, data[pos + 1]


def _read_header(data: bytes) -> tuple[JpegFrame, int]:
    """Walk the segments from SOI to the first SOS: `(frame, offset of the first SOS marker)`."""
    if not data.startswith(JPEG_SIGNATURE):
        raise JpegStructureError(f"no SOI marker: the file starts with {data[:4]!r}")
    frame, pos = None, 2
    for _ in range(MAX_SEGMENTS):
        at, code = _next_marker(data, pos)
        if code == _TEM:
            pos = at + 2
            continue
        if code == _SOS:
            if frame is None:
                raise JpegStructureError(f"the scan at offset {at} comes before any frame header")
            _segment_end(data, at, code)
            _check_scan_header(data, at, frame)
            return frame, at
        if code == _EOI:
            raise JpegStructureError(f"EOI marker at offset {at} before any scan")
        if code not in _FRAME and code not in _TABLES:
            raise JpegStructureError(f"unexpected marker {_name(code)} at offset {at}")
        end = _segment_end(data, at, code)
        if code in _FRAME:
            if frame is not None:
                raise JpegStructureError(f"a second frame header ({_name(code)}) at offset {at}")
            frame = _parse_frame(data, at, code)
        pos = end
    raise _too_many_segments()


def _too_many_segments() -> JpegStructureError:
    return JpegStructureError(f"more than {MAX_SEGMENTS:,} marker segments")


def read_jpeg_structure(data: bytes) -> JpegStructure:
    """Check the marker structure of a JPEG (module docstring); raises JpegStructureError."""
    frame, at = _read_header(data)
    scans, pos, segments = 0, at, 0
    while (found := _SCAN_MARKER.search(data, pos)) is not None:  # the first: the first SOS
        segments += 1
        if segments > MAX_SEGMENTS:
            raise _too_many_segments()
        marker = found.start()
        code = data[marker + 1]
        if code == _EOI:
            return JpegStructure(frame=frame, scans=scans, end=marker + 2)
        if code not in _BETWEEN_SCANS:
            raise JpegStructureError(
                f"unexpected marker {_name(code)} at offset {marker} in the scan data"
            )
        pos = _segment_end(data, marker, code)  # skips what the segment holds
        if code == _SOS:
            _check_scan_header(data, marker, frame)
            scans += 1
    raise JpegStructureError(
        f"truncated: no EOI marker after the scan data (the file ends at byte {len(data)})"
    )
