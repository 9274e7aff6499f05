"""The JPEG marker-structure check (compiler/jpeg_structure.py) on real and hostile files."""

from __future__ import annotations

import struct

import cv2
import numpy as np
import pytest
from fastpack.compiler.images.jpeg_structure import (
    JpegStructure,
    JpegStructureError,
    read_jpeg_structure,
)
from fastpack.formats import FastpackError
from fastpack.formats.image_header import MAX_SEGMENTS
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.compiler._helpers import exif_app1, scan_data_at, with_noise_in_scan
from tests.conftest import jpeg_bytes, synthetic_rgb

BASELINE = jpeg_bytes(40, 56, seed=21)
SOS_AT = BASELINE.index(b"\xff\xda")
SOF_AT = BASELINE.index(b"\xff\xc0")
SOF_END = SOF_AT + 2 + int.from_bytes(BASELINE[SOF_AT + 2 : SOF_AT + 4], "big")
SCAN_DATA_AT = scan_data_at(BASELINE)
HEADER = BASELINE[:SCAN_DATA_AT]  # SOI ... SOS segment: everything before the entropy-coded data
EOI = b"\xff\xd9"


def segment(code: int, payload: bytes) -> bytes:
    return bytes([0xFF, code]) + struct.pack(">H", len(payload) + 2) + payload


def cv2_jpeg(*params: int) -> bytes:
    ok, encoded = cv2.imencode(".jpg", synthetic_rgb(48, 64, 22), list(params))
    assert ok
    return encoded.tobytes()


def with_frame(**changes: int) -> bytes:
    """BASELINE with its SOF fields replaced: precision, height, width, components, length."""
    fields = dict(
        zip(
            ("length", "precision", "height", "width", "components"),
            struct.unpack_from(">HBHHB", BASELINE, SOF_AT + 2),
            strict=True,
        )
    )
    fields.update(changes)
    packed = struct.pack(">HBHHB", *fields.values())
    return BASELINE[: SOF_AT + 2] + packed + BASELINE[SOF_AT + 10 :]


def test_baseline_jpeg() -> None:
    s = read_jpeg_structure(BASELINE)
    assert (s.frame.marker, s.frame.height, s.frame.width, s.frame.components) == (0xC0, 40, 56, 3)
    assert (s.scans, s.end) == (1, len(BASELINE))


def test_progressive_jpeg_has_scans_with_tables_between_them() -> None:
    data = cv2_jpeg(cv2.IMWRITE_JPEG_PROGRESSIVE, 1)
    s = read_jpeg_structure(data)
    assert s.frame.marker == 0xC2
    assert s.scans == data.count(b"\xff\xda") > 1
    assert data.count(b"\xff\xc4") > 1  # Huffman tables between scans, skipped as segments
    assert s.end == len(data)


def test_restart_markers_in_the_scan_data() -> None:
    data = cv2_jpeg(cv2.IMWRITE_JPEG_RST_INTERVAL, 1)
    assert sum(data.count(bytes([0xFF, 0xD0 + n])) for n in range(8)) >= 8
    assert read_jpeg_structure(data).end == len(data)


def test_markers_inside_segments_are_skipped() -> None:
    thumbnail = jpeg_bytes(8, 8, seed=23)  # holds SOS and EOI markers of its own
    exif = exif_app1(1)
    app1 = segment(0xE1, exif[4:] + thumbnail)
    comment = segment(0xFE, b"\xff\xd9\xff\xc0\xff\x02 not markers")
    data = BASELINE[:2] + app1 + BASELINE[2:-2] + comment + EOI
    s = read_jpeg_structure(data)
    assert (s.scans, s.end, s.frame.height) == (1, len(data), 40)


def test_fill_bytes_before_markers() -> None:
    data = BASELINE[:2] + b"\xff\xff" + BASELINE[2:-2] + b"\xff\xff\xff" + EOI
    assert read_jpeg_structure(data).end == len(data)


@pytest.mark.parametrize(
    "trailer",
    [b"\x00" * 100, b"\xff" * 3, b"appended by a phone: \xff\x02\xff\xd8", jpeg_bytes(seed=24)],
    ids=["zeros", "ff", "text", "second-jpeg"],
)
def test_bytes_after_eoi_are_ignored(trailer: bytes) -> None:
    assert read_jpeg_structure(BASELINE + trailer).end == len(BASELINE)


@pytest.mark.parametrize(
    "data", [BASELINE, cv2_jpeg(cv2.IMWRITE_JPEG_PROGRESSIVE, 1)], ids=["baseline", "progressive"]
)
def test_every_prefix_is_rejected(data: bytes) -> None:
    for n in range(2, len(data)):
        with pytest.raises(JpegStructureError, match=r"^truncated: ") as caught:
            read_jpeg_structure(data[:n])
        if data is BASELINE and n > SCAN_DATA_AT:
            assert str(caught.value).startswith("truncated: no EOI marker after the scan data")


def test_truncated_then_zero_filled() -> None:
    data = BASELINE[: len(BASELINE) // 2]
    data += bytes(len(BASELINE) - len(data))  # a preallocated file, written halfway
    with pytest.raises(JpegStructureError, match=r"^truncated: no EOI marker"):
        read_jpeg_structure(data)


def test_error_is_a_fastpack_value_error() -> None:
    with pytest.raises(FastpackError):
        read_jpeg_structure(b"")
    with pytest.raises(ValueError, match=r"no SOI marker: the file starts with b''"):
        read_jpeg_structure(b"")


GARBAGE = np.random.default_rng(25).integers(0, 256, 3000, dtype=np.uint8).tobytes()
SOF = f"the frame header (FFC0) at offset {SOF_AT} gives"
SOS_WITHOUT_FRAME = SOS_AT - (SOF_END - SOF_AT)
HOSTILE = {
    "only-soi": (b"\xff\xd8", "truncated: no scan (SOS) before the end of the file at byte 2"),
    "not-soi": (b"\x89PNG\r\n\x1a\n", "no SOI marker: the file starts with b'\\x89PNG'"),
    "html": (b"\xff\xd8<!DOCTYPE html>", "expected a marker at offset 2, found byte 0x3C"),
    "eoi-first": (b"\xff\xd8" + EOI, "EOI marker at offset 2 before any scan"),
    "unknown-marker": (b"\xff\xd8\xff\x02", "unexpected marker FF02 at offset 2"),
    "ends-in-marker": (b"\xff\xd8\xff\xff", "truncated: the file ends in a marker at offset 3"),
    "no-length": (
        b"\xff\xd8\xff\xe0\x00",
        "truncated: the FFE0 segment at offset 2 has no length (the file ends at byte 5)",
    ),
    "length-past-end": (
        b"\xff\xd8\xff\xe0\x10\x00JFIF",
        "truncated: the FFE0 segment at offset 2 needs 4096 bytes, the file ends at byte 10",
    ),
    "length-under-2": (
        BASELINE[:2] + b"\xff\xe0\x00\x01" + BASELINE[2:],
        "the FFE0 segment at offset 2 has length 1",
    ),
    "stray-byte": (
        BASELINE[:2] + b"\x00" + BASELINE[2:],
        "expected a marker at offset 2, found byte 0x00",
    ),
    "zero-width": (with_frame(width=0), f"{SOF} a size of 0 x 40 pixels"),
    "precision": (with_frame(precision=7), f"{SOF} a sample precision of 7 bits"),
    "components": (with_frame(components=5), f"{SOF} 5 components"),
    "frame-length": (with_frame(components=2), f"{SOF} length 17 for 2 components (expected 14)"),
    "scan-before-frame": (
        BASELINE[:SOF_AT] + BASELINE[SOF_END:],
        f"the scan at offset {SOS_WITHOUT_FRAME} comes before any frame header",
    ),
    "two-frames": (
        BASELINE[:SOF_END] + BASELINE[SOF_AT:],
        f"a second frame header (FFC0) at offset {SOF_END}",
    ),
    "scan-components": (
        BASELINE[: SOS_AT + 4] + b"\x04" + BASELINE[SOS_AT + 5 :],
        f"the scan header at offset {SOS_AT} names 4 components (the frame has 3)",
    ),
    "scan-length": (
        BASELINE[: SOS_AT + 4] + b"\x02" + BASELINE[SOS_AT + 5 :],
        f"the scan header at offset {SOS_AT} has length 12 for 2 components (expected 10)",
    ),
    "header-then-html": (
        HEADER + b"<html><body>Not Found</body></html>\n",
        f"truncated: no EOI marker after the scan data (the file ends at byte {len(HEADER) + 36})",
    ),
    "header-then-garbage": (HEADER + GARBAGE + EOI, "unexpected marker FF"),
    "frame-in-scan-data": (
        BASELINE[:-2] + segment(0xC0, BASELINE[SOF_AT + 4 : SOF_END]) + EOI,
        f"unexpected marker FFC0 at offset {len(BASELINE) - 2} in the scan data",
    ),
    "scan-data-cut-short": (BASELINE[:-300] + EOI[:1], "truncated: no EOI marker"),
}


@pytest.mark.parametrize(("data", "message"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_structure_is_rejected(data: bytes, message: str) -> None:
    with pytest.raises(JpegStructureError) as caught:
        read_jpeg_structure(data)
    assert str(caught.value).startswith(message)


def test_corrupt_entropy_data_is_beyond_its_reach() -> None:
    data = with_noise_in_scan(jpeg_bytes(64, 80, seed=26), seed=26)
    assert read_jpeg_structure(data).end == len(data)


def structure_or_none(data: bytes) -> JpegStructure | None:
    try:
        return read_jpeg_structure(data)
    except JpegStructureError:
        return None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_noise_after_soi_raises_only_the_named_error(noise: bytes) -> None:
    data = b"\xff\xd8" + noise
    s = structure_or_none(data)
    assert s is None or data[s.end - 2 : s.end] == EOI


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(BASELINE) - 1), st.integers(0, 255)), max_size=6))
def test_damaged_jpeg_raises_only_the_named_error(changes: list[tuple[int, int]]) -> None:
    data = bytearray(BASELINE)
    for at, value in changes:
        data[at] = value
    s = structure_or_none(bytes(data))
    assert s is None or (2 < s.end <= len(data) and data[s.end - 2 : s.end] == EOI)


def test_a_bounded_number_of_segments() -> None:
    comments = segment(0xFE, b"")
    many_before = BASELINE[:2] + comments * (MAX_SEGMENTS + 1) + BASELINE[2:]
    with pytest.raises(JpegStructureError, match=r"more than 10,000 marker segments"):
        read_jpeg_structure(many_before)
    many_between = BASELINE[:-2] + comments * (MAX_SEGMENTS + 1) + EOI
    with pytest.raises(JpegStructureError, match=r"more than 10,000 marker segments"):
        read_jpeg_structure(many_between)
    some = BASELINE[:2] + comments * 1000 + BASELINE[2:]
    assert read_jpeg_structure(some).frame == read_jpeg_structure(BASELINE).frame


def test_long_runs_of_fill_bytes() -> None:
    filled = BASELINE[:SOF_AT] + b"\xff" * 100_000 + BASELINE[SOF_AT:]
    assert read_jpeg_structure(filled).frame == read_jpeg_structure(BASELINE).frame
    with pytest.raises(JpegStructureError, match=r"truncated: the file ends in a marker"):
        read_jpeg_structure(BASELINE[:SOF_AT] + b"\xff" * 1000)
