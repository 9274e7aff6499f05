"""formats/image_header: the size a JPEG's frame header or a PNG's IHDR declares, read from the
bytes alone (as libjpeg and OpenCV read them), and the pixel budget checked against it."""

from __future__ import annotations

import re
import struct

import cv2
import numpy as np
import pytest
import simplejpeg
from fastpack.formats import FieldValueError, PixelBudgetError
from fastpack.formats.image_header import (
    DEFAULT_PIXEL_BUDGET,
    MAX_SEGMENTS,
    ImageHeader,
    ImageHeaderError,
    check_budget_value,
    check_pixel_budget,
    image_header,
    jpeg_header,
    png_header,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import jpeg_bytes, synthetic_rgb


def encoded(height: int, width: int, *, progressive: bool = False, gray: bool = False) -> bytes:
    bgr = cv2.cvtColor(synthetic_rgb(height, width, 3), cv2.COLOR_RGB2BGR)
    image = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY) if gray else bgr
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)])
    assert ok
    return data.tobytes()


@pytest.mark.parametrize(
    ("data", "components", "progressive"),
    [
        (jpeg_bytes(61, 97), 3, False),
        (encoded(45, 130, progressive=True), 3, True),
        (encoded(33, 20, gray=True), 1, False),
        (encoded(17, 300, progressive=True, gray=True), 1, True),
    ],
    ids=["baseline", "progressive", "gray", "gray-progressive"],
)
def test_a_jpeg_header_gives_what_libjpeg_reads(
    data: bytes, components: int, progressive: bool
) -> None:
    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    expected = ImageHeader(height, width, components, progressive)
    assert jpeg_header(data) == expected
    assert jpeg_header(memoryview(bytearray(data))) == expected
    assert image_header(data) == expected
    assert expected.samples == height * width * components
    assert expected.size == (height, width)


def test_fill_bytes_standalone_markers_and_extraneous_bytes_are_stepped_over() -> None:
    """As libjpeg reads them: it warns of the extraneous bytes and decodes the image (OpenCV
    decodes it; simplejpeg refuses it for the warning)."""
    data = jpeg_bytes(40, 56)
    odd = data[:2] + b"\xff\xff\xff\x01" + b"junk" + b"\xff\xfe\x00\x04ab" + data[2:]
    decoded = cv2.imdecode(np.frombuffer(odd, np.uint8), cv2.IMREAD_COLOR)
    assert decoded is not None
    assert decoded.shape == (40, 56, 3)
    assert jpeg_header(odd) == ImageHeader(40, 56, 3, False)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not a JPEG: it starts with b'', not FF D8"),
        (b"\x89PNG\r\n", r"not a JPEG: it starts with b'\\x89PNG', not FF D8"),
        (b"\xff\xd8\xff\xe0\x00", "JPEG cut off: the FFE0 segment at offset 2 has no length"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG without a frame header \\(SOF\\): the data ends"),
        (b"\xff\xd8\xff\xda\x00\x08", "JPEG without a frame header \\(SOF\\) before the FFDA"),
        (b"\xff\xd8\xff\xd9", "JPEG without a frame header \\(SOF\\) before the FFD9 marker"),
        (b"\xff\xd8\xff\xc0\x00\x11\x08\x00", "JPEG cut off in its frame header"),
        (
            b"\xff\xd8" + b"\xff\xfe\x00\x02" * (MAX_SEGMENTS + 1),
            "JPEG with more than 10,000 segments before its frame header",
        ),
    ],
    ids=["empty", "png", "no-length", "ends", "scan-first", "eoi-first", "cut-sof", "segments"],
)
def test_headers_that_give_no_size_are_image_header_errors(data: bytes, message: str) -> None:
    with pytest.raises(ImageHeaderError, match=message) as refused:
        jpeg_header(data)
    assert isinstance(refused.value, FieldValueError)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_a_header_or_an_image_header_error(noise: bytes) -> None:
    for data in (b"\xff\xd8" + noise, jpeg_bytes(16, 16)[:20] + noise, noise):
        try:
            header = image_header(data)
        except ImageHeaderError:
            continue
        assert header.height >= 0
        assert header.width >= 0


@pytest.mark.parametrize(
    ("image", "flag", "components"),
    [
        (np.zeros((9, 13), np.uint8), cv2.IMREAD_UNCHANGED, 1),
        (np.zeros((9, 13, 3), np.uint8), cv2.IMREAD_UNCHANGED, 3),
        (np.zeros((9, 13, 4), np.uint8), cv2.IMREAD_UNCHANGED, 4),
        (np.zeros((9, 13), np.uint16), cv2.IMREAD_UNCHANGED, 1),
    ],
    ids=["gray", "rgb", "rgba", "gray16"],
)
def test_a_png_header_gives_its_size_and_the_channels_opencv_decodes(
    image: np.ndarray, flag: int, components: int
) -> None:
    ok, data = cv2.imencode(".png", image)
    assert ok
    header = png_header(data.tobytes())
    assert header == ImageHeader(9, 13, components, False)
    decoded = cv2.imdecode(data, flag)
    assert decoded is not None
    assert (decoded.shape[2] if decoded.ndim == 3 else 1) <= header.components


def png_with_color_type(color: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", 13, 9, 8, color, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\x00" * 4


@pytest.mark.parametrize(("color", "components"), [(0, 1), (2, 3), (3, 4), (4, 4), (6, 4)])
def test_png_color_types_count_as_opencv_decodes_them(color: int, components: int) -> None:
    assert png_header(png_with_color_type(color)).components == components


def test_a_png_without_its_ihdr_first_is_an_image_header_error() -> None:
    with pytest.raises(ImageHeaderError, match="not a PNG with its IHDR chunk first"):
        png_header(b"\x89PNG\r\n\x1a\n" + bytes(10))
    with pytest.raises(ImageHeaderError, match="not a PNG with a valid IHDR chunk first"):
        png_header(png_with_color_type(5))


def test_the_budget_allows_exactly_its_samples() -> None:
    header = ImageHeader(16384, 16384, 1, True)
    assert header.samples == DEFAULT_PIXEL_BUDGET
    check_pixel_budget(header, DEFAULT_PIXEL_BUDGET)
    over = ImageHeader(16384, 16385, 1, True)
    message = (
        "16385 x 16384 pixels x 1 components = 268,451,840 samples, over the pixel budget of "
        "268,435,456 (--pixel-budget)"
    )
    with pytest.raises(PixelBudgetError, match=f"^{re.escape(message)}$") as refused:
        check_pixel_budget(over, DEFAULT_PIXEL_BUDGET, "--pixel-budget")
    assert isinstance(refused.value, FieldValueError)
    assert isinstance(refused.value, ValueError)


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "7", None])
def test_a_budget_is_an_int_of_at_least_one(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^Dataset pixel_budget must be an int >= 1 \(samples\)"):
        check_budget_value(bad, "Dataset pixel_budget")
    assert check_budget_value(1, "x") == 1


@pytest.mark.parametrize(("at", "value", "what"), [(5, 0, "8 x 0"), (7, 0, "0 x 8"), (9, 0, "x 0")])
def test_a_jpeg_frame_of_no_pixels_or_no_components_is_an_image_header_error(
    at: int, value: int, what: str
) -> None:
    data = bytearray(simplejpeg.encode_jpeg(np.zeros((8, 8, 1), np.uint8), 90, "GRAY", "Gray"))
    sof = data.index(b"\xff\xc0")
    data[sof + at] = data[sof + at + 1] = value  # height at +5, width at +7 (two bytes each)
    if at == 9:
        data[sof + at] = value  # the component count is one byte
    with pytest.raises(ImageHeaderError, match=rf"FFC0 at offset {sof}\) declares an empty "):
        jpeg_header(bytes(data))
    with pytest.raises(ImageHeaderError, match=re.escape(what)):
        jpeg_header(bytes(data))


def test_a_png_of_no_pixels_is_an_image_header_error() -> None:
    ok, encoded_png = cv2.imencode(".png", np.zeros((4, 4), np.uint8))
    assert ok
    data = bytearray(encoded_png.tobytes())
    data[16:20] = struct.pack(">I", 0)  # the IHDR's width
    with pytest.raises(ImageHeaderError, match=r"PNG IHDR chunk declares an empty image: 0 x 4"):
        png_header(bytes(data))
