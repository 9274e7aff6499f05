"""The image policy (formats/SPEC.md section 6) on real encoded images."""

from __future__ import annotations

import re
import struct
import zlib
from typing import cast

import cv2
import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from fastpack.compiler import PreparedImage, Reject, prepare_image
from fastpack.compiler.images.exif import apply_orientation, jpeg_orientation, tiff_orientation
from fastpack.compiler.images.policy import CHECKS, Check
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.compiler._helpers import (
    cmyk_jpeg,
    exif_app1,
    gray_jpeg,
    scan_data_at,
    with_noise_in_scan,
    with_orientation,
)
from tests.conftest import jpeg_bytes, png_bytes, synthetic_rgb


def converted(data: bytes, max_side: int | None = None) -> npt.NDArray[np.uint8]:
    """prepare_image's output, checked to be a new 3-component 4:2:0 JPEG, decoded to RGB."""
    result = prepare_image(data, max_side=max_side)
    assert isinstance(result, PreparedImage), result
    assert result.converted
    assert simplejpeg.decode_jpeg_header(result.data)[2:] == ("YCbCr", "420")
    pixels: npt.NDArray[np.uint8] = simplejpeg.decode_jpeg(result.data, colorspace="RGB")
    return pixels


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def as_stored(rgb: np.ndarray) -> npt.NDArray[np.uint8]:
    """What the policy's encoder (quality 90, 4:2:0) makes of these pixels, decoded again."""
    data = simplejpeg.encode_jpeg(np.ascontiguousarray(rgb), 90, "RGB", "420")
    pixels: npt.NDArray[np.uint8] = simplejpeg.decode_jpeg(data, colorspace="RGB")
    return pixels


def test_upright_jpeg_is_kept_byte_for_byte() -> None:
    data = jpeg_bytes(64, 80, seed=1)
    assert prepare_image(data) == PreparedImage(data, converted=False)
    assert prepare_image(data, max_side=80) == PreparedImage(data, converted=False)


def test_progressive_and_exif_orientation_1_are_kept() -> None:
    rgb = cv2.cvtColor(synthetic_rgb(48, 64, 2), cv2.COLOR_RGB2BGR)
    ok, progressive = cv2.imencode(".jpg", rgb, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    assert ok
    data = progressive.tobytes()
    assert prepare_image(data) == PreparedImage(data, converted=False)
    tagged = with_orientation(jpeg_bytes(seed=3), 1)
    assert prepare_image(tagged) == PreparedImage(tagged, converted=False)


def test_unparsable_exif_does_not_reject() -> None:
    data = jpeg_bytes(seed=4)
    payload = b"Exif\x00\x00XX*\x00\x01\x02"  # no valid TIFF byte order
    garbage = data[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + data[2:]
    assert prepare_image(garbage) == PreparedImage(garbage, converted=False)


def test_jpeg_over_max_side_is_shrunk_to_it() -> None:
    data = jpeg_bytes(120, 300, seed=5)
    pixels = converted(data, max_side=100)
    assert pixels.shape == (40, 100, 3)
    reference = cv2.resize(simplejpeg.decode_jpeg(data), (100, 40), interpolation=cv2.INTER_AREA)
    # The policy decodes at the smallest DCT scale that covers the target (here 1/2) before the
    # area filter, so it differs a little from filtering the full-size decode.
    assert mean_abs_diff(pixels, as_stored(reference)) < 3


def test_quality_is_used_for_converted_images() -> None:
    data = jpeg_bytes(200, 200, seed=6)
    low = prepare_image(data, max_side=150, quality=20)
    high = prepare_image(data, max_side=150, quality=95)
    assert isinstance(low, PreparedImage)
    assert isinstance(high, PreparedImage)
    assert len(low.data) < len(high.data) / 2


@pytest.mark.parametrize("byte_order", ["<", ">"])
@pytest.mark.parametrize("orientation", range(2, 9))
def test_exif_rotated_jpeg_is_turned_upright(orientation: int, byte_order: str) -> None:
    data = with_orientation(jpeg_bytes(37, 53, seed=orientation), orientation, byte_order)
    assert jpeg_orientation(data) == orientation
    # OpenCV's IMREAD_COLOR applies the EXIF orientation itself: the reference.
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert bgr is not None
    upright = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    assert np.array_equal(apply_orientation(simplejpeg.decode_jpeg(data), orientation), upright)
    pixels = converted(data)
    assert np.array_equal(pixels, as_stored(upright))


def test_rotated_jpeg_over_max_side_keeps_the_limit_on_its_longer_side() -> None:
    data = with_orientation(jpeg_bytes(100, 260, seed=7), 6)
    assert converted(data, max_side=130).shape == (130, 50, 3)


def test_grayscale_jpeg_becomes_rgb() -> None:
    data = gray_jpeg(40, 56, seed=8)
    pixels = converted(data)
    gray = simplejpeg.decode_jpeg(data, colorspace="GRAY")[..., 0]
    assert np.array_equal(pixels, as_stored(np.dstack([gray] * 3)))


def test_cmyk_jpeg_becomes_rgb() -> None:
    data = cmyk_jpeg(40, 56, seed=9)
    assert simplejpeg.decode_jpeg_header(data)[2] in ("CMYK", "YCCK")
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert bgr is not None
    reference = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    assert np.array_equal(converted(data), as_stored(reference))


def test_png_alpha_is_composited_over_white() -> None:
    rgb = synthetic_rgb(32, 48, 10)
    alpha = np.zeros((32, 48), np.uint8)
    alpha[:, 24:] = 255  # left half transparent, right half opaque
    ok, png = cv2.imencode(".png", np.dstack([cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), alpha]))
    assert ok
    pixels = converted(png.tobytes())
    assert pixels[:, :20].min() >= 245  # white where transparent
    assert mean_abs_diff(pixels[:, 28:], as_stored(rgb)[:, 28:]) < 0.5


def test_half_transparent_png_blends() -> None:
    pixels = converted(png_bytes(48, 40, seed=11, alpha=True))  # alpha 128 everywhere
    expected = (synthetic_rgb(48, 40, 11).astype(np.float64) * 128 + 255 * 127) / 255
    assert mean_abs_diff(pixels, as_stored(expected.round().astype(np.uint8))) < 0.5


def test_sixteen_bit_png_is_scaled_to_eight_bits() -> None:
    rgb = synthetic_rgb(30, 40, 12)
    ok, png = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR).astype(np.uint16) * 257)
    assert ok
    assert np.array_equal(converted(png.tobytes()), as_stored(rgb))


@pytest.mark.parametrize("extension", [".webp", ".bmp", ".tiff"])
def test_other_formats_are_converted(extension: str) -> None:
    rgb = synthetic_rgb(30, 44, 13)
    params = [cv2.IMWRITE_WEBP_QUALITY, 101] if extension == ".webp" else []  # lossless
    ok, encoded = cv2.imencode(extension, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), params)
    assert ok
    assert np.array_equal(converted(encoded.tobytes()), as_stored(rgb))


def test_png_exif_orientation_is_applied() -> None:
    bgr = cv2.cvtColor(synthetic_rgb(20, 30, 14), cv2.COLOR_RGB2BGR)
    tiff = np.frombuffer(exif_app1(6)[10:], np.uint8)
    ok, png = cv2.imencodeWithMetadata(".png", bgr, [cv2.IMAGE_METADATA_EXIF], [tiff])
    assert ok
    assert tiff_orientation(tiff.tobytes()) == 6
    rgb = cast("npt.NDArray[np.uint8]", cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))  # uint8 in, out
    upright = apply_orientation(rgb, 6)
    pixels = converted(png.tobytes())
    assert pixels.shape == (30, 20, 3)
    assert np.array_equal(pixels, as_stored(upright))


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header announces `width` x `height` RGB pixels, with no pixel data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty file"),
        (b"hello, this is text in a file named x.jpg\n", "not a decodable image"),
        (b"\xff\xd8", "not a decodable image"),  # only SOI: not even a JPEG signature
        (jpeg_bytes(64, 80, seed=15)[:-700], "corrupt JPEG: truncated: no EOI marker"),
        (jpeg_bytes(64, 80, seed=16)[:300], "corrupt JPEG"),
        (b"\xff\xd8\xff\xe0" + bytes(40), "corrupt JPEG"),
        (png_bytes(seed=17)[:-300], "not a decodable image"),
        (
            png_header_only(100_000, 100_000),
            "too large: 100000 x 100000 pixels x 3 components = 30,000,000,000 samples, over the "
            "pixel budget of 268,435,456 (--pixel-budget)",
        ),
        (b"BM" + b"\xff" * 60, "not a decodable image"),
        (b"II*\x00" + b"\xff" * 100, "not a decodable image"),
    ],
    ids=[
        "empty",
        "text",
        "only-soi",
        "truncated-jpeg",
        "jpeg-header-only",
        "jpeg-garbage",
        "truncated-png",
        "png-too-many-pixels",
        "bmp-garbage",
        "tiff-garbage",
    ],
)
def test_bad_inputs_are_rejected_with_a_reason(data: bytes, reason: str, check: Check) -> None:
    result = prepare_image(data, check=check)
    assert isinstance(result, Reject)
    assert result.reason.startswith(reason)


HEADER = jpeg_bytes(64, 80, seed=18)[: scan_data_at(jpeg_bytes(64, 80, seed=18))]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (jpeg_bytes(64, 80, seed=19)[:-1], "corrupt JPEG: truncated: no EOI marker after the scan"),
        (HEADER + b"<html>404 Not Found</html>", "corrupt JPEG: truncated: no EOI marker"),
        (
            HEADER + b"\x12\xff\x3a" + bytes(500) + b"\xff\xd9",
            f"corrupt JPEG: unexpected marker FF3A at offset {len(HEADER) + 1} in the scan data",
        ),
    ],
    ids=["truncated", "html-after-header", "garbage-after-header"],
)
def test_broken_structure_is_rejected_at_every_check(
    data: bytes, reason: str, check: Check
) -> None:
    result = prepare_image(data, check=check)
    assert isinstance(result, Reject)
    assert result.reason.startswith(reason)


def test_corrupt_entropy_data_is_kept_by_structure_and_rejected_by_decode() -> None:
    data = with_noise_in_scan(jpeg_bytes(64, 80, seed=20), seed=0)
    assert prepare_image(data) == PreparedImage(data, converted=False)  # structure: the default
    assert prepare_image(data, check="structure") == PreparedImage(data, converted=False)
    result = prepare_image(data, check="decode")
    assert isinstance(result, Reject)
    assert re.fullmatch(
        r"corrupt JPEG: Corrupt JPEG data: \d+ extraneous bytes before marker "
        r"0xd9",
        result.reason,
    )


def test_corrupt_entropy_data_of_a_converted_jpeg_is_rejected_at_every_check() -> None:
    data = with_noise_in_scan(gray_jpeg(64, 80, seed=21), seed=1)  # converted: always decoded
    for check in CHECKS:
        result = prepare_image(data, check=check)
        assert isinstance(result, Reject)
        assert result.reason.startswith("corrupt JPEG: Corrupt JPEG data"), result


def test_bytes_after_eoi_are_kept_with_the_image_at_every_check() -> None:
    data = jpeg_bytes(64, 80, seed=22) + b"\x00" * 64 + b"trailer written by a camera"
    for check in CHECKS:
        assert prepare_image(data, check=check) == PreparedImage(data, converted=False)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_orientation_parsers_never_fail(noise: bytes) -> None:
    assert 1 <= jpeg_orientation(b"\xff\xd8" + noise) <= 8
    assert 1 <= jpeg_orientation(b"\xff\xd8" + exif_app1(3)[:12] + noise) <= 8
    assert 1 <= tiff_orientation(noise) <= 8
    assert 1 <= tiff_orientation(b"II*\x00\x08\x00\x00\x00" + noise) <= 8
