"""The window decoder decodes only the restart intervals around the window where the file has
markers on a grid (every whole number of MCU rows, or every whole fraction of one:
`fastpack build --restart-markers`), and still gives exactly the pixels of a whole-image decode
cut to the window: across subsamplings, sizes that are not a multiple of the MCU, DCT scales,
the fast DCT and upsampling, markers from OpenCV's encoder and from the build's transcoder. A
file whose markers are off the grid, a progressive file, or a file whose markers are out of
turn decodes from the top as before."""

from __future__ import annotations

from typing import NamedTuple

import cv2
import numpy as np
import pytest
import simplejpeg
from fastpack.compiler.images.baseline import baseline_available, to_baseline
from fastpack.reader.image.crop_decode import decode_window as crop_window
from fastpack.reader.image.decode import DecodeOptions, decode_scaled
from fastpack.reader.image.guard import ImageDecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ._window import decode_window, load_window_decoder

extension = load_window_decoder()

SAMPLINGS = {  # cv2's flag, and the MCU's (height, width) in pixels
    "4:2:0": (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420, (16, 16)),
    "4:2:2": (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422, (8, 16)),
    "4:4:4": (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444, (8, 8)),
    "4:4:0": (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440, (16, 8)),
    "4:1:1": (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_411, (8, 32)),
}
SIZES = [(131, 77), (250, 333), (97, 200), (64, 48)]
MIN_COLUMNS = 32  # the narrowest region the decoder decodes (_jpeg_crop.c)
OPTIONS = [
    DecodeOptions(),
    DecodeOptions(fastdct=True),
    DecodeOptions(fastupsample=True),
    DecodeOptions(fastdct=True, fastupsample=True),
]


def textured(height: int, width: int, seed: int) -> np.ndarray:
    """Colour noise over gradients: chroma that changes from pixel to pixel, so that any
    difference in upsampling or in the DC predictors shows."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // width, y * 255 // height, (x + y) % 256], -1)
    return np.clip(base + rng.integers(-60, 60, (height, width, 3)), 0, 255).astype(np.uint8)


def encode(image: np.ndarray, sampling: str | None, interval: int) -> bytes:
    """A JPEG with a restart marker every `interval` MCUs (None: greyscale)."""
    params = [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_RST_INTERVAL, interval]
    if sampling is None:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    else:
        params += [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, SAMPLINGS[sampling][0]]
        image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    ok, data = cv2.imencode(".jpg", image, params)
    assert ok
    return data.tobytes()


def mcus_per_row(width: int, sampling: str | None) -> int:
    mcu_width = 8 if sampling is None else SAMPLINGS[sampling][1][1]
    return -(-width // mcu_width)


class Variant(NamedTuple):
    data: bytes
    mcu: tuple[int, int]  # height, width in pixels
    interval: int  # in MCUs
    per_row: int  # MCUs in a row


def variants() -> dict[str, Variant]:
    """Files with markers every 1, 2 and 3 MCU rows, and at every divisor of a row."""
    out = {}
    for i, (h, w) in enumerate(SIZES):
        image = textured(h, w, i)
        for sampling in [*SAMPLINGS, None]:
            mcu = (8, 8) if sampling is None else SAMPLINGS[sampling][1]
            per_row = mcus_per_row(w, sampling)
            name = f"{sampling or 'grey'} {h}x{w}"
            for rows in (1, 2, 3):
                data = encode(image, sampling, rows * per_row)
                out[f"{name} every {rows} rows"] = Variant(data, mcu, rows * per_row, per_row)
            for interval in (n for n in range(1, per_row) if per_row % n == 0):
                data = encode(image, sampling, interval)
                out[f"{name} every {interval} MCUs"] = Variant(data, mcu, interval, per_row)
    return out


VARIANTS = variants()


def whole(data: bytes, shift: int, options: DecodeOptions) -> np.ndarray:
    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    image: np.ndarray = decode_scaled(data, height, width, shift, options).copy()
    return image


def window_of(
    data: bytes, shift: int, window: tuple[int, int, int, int], options: DecodeOptions
) -> tuple[np.ndarray, tuple[int, int]]:
    """The extension's decode of `window` (top, left, bottom, right) cut to it, and where the
    region it decoded starts (full-size rows and columns cut off above and to the left)."""
    return decode_window(extension, data, shift, window, options)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(VARIANTS)),
    shift=st.integers(0, 3),
    options=st.sampled_from(OPTIONS),
    data=st.data(),
)
def test_a_cut_window_has_the_pixels_of_the_whole_decode(
    name: str, shift: int, options: DecodeOptions, data: st.DataObject
) -> None:
    jpeg = VARIANTS[name].data
    reference = whole(jpeg, shift, options)
    height, width = reference.shape[:2]
    top = data.draw(st.integers(0, height - 1))
    left = data.draw(st.integers(0, width - 1))
    bottom = data.draw(st.integers(top + 1, height))
    right = data.draw(st.integers(left + 1, width))
    got, _ = window_of(jpeg, shift, (top, left, bottom, right), options)
    np.testing.assert_array_equal(got, reference[top:bottom, left:right], err_msg=name)


def expected_cut(
    variant: Variant, shift: int, window: tuple[int, int, int, int], width: int
) -> tuple[int, int]:
    """Where the decoded region starts: one MCU of context beyond the window's one pixel of
    context (and its widening to 32 columns), on the grid of restart intervals (no cut beside
    the window with intervals of whole rows). `width`: the scaled image's."""
    top, left, _, right = window
    x0, x1 = max(left - 1, 0), min(right + 1, width)
    if x1 - x0 < MIN_COLUMNS:
        x1 = min(x0 + MIN_COLUMNS, width)
        x0 = max(x1 - MIN_COLUMNS, 0)
    mcu_h, mcu_w = variant.mcu[0] >> shift, variant.mcu[1] >> shift
    row = max(max(top - 1, 0) // mcu_h - 1, 0)
    if variant.interval >= variant.per_row:
        rows = variant.interval // variant.per_row
        return row // rows * rows * variant.mcu[0], 0
    column = max(x0 // mcu_w - 1, 0)
    return row * variant.mcu[0], column // variant.interval * variant.interval * variant.mcu[1]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_region_starts_one_mcu_before_the_window_on_the_grid(name: str) -> None:
    variant = VARIANTS[name]
    for shift in range(4):
        reference = whole(variant.data, shift, DecodeOptions())
        height, width = reference.shape[:2]
        for top in range(0, height, max(height // 7, 1)):
            for left in range(0, width, max(width // 5, 1)):
                window = (top, left, height, width)
                got, cut = window_of(variant.data, shift, window, DecodeOptions())
                assert cut == expected_cut(variant, shift, window, width), (
                    f"{name} {shift} {window}"
                )
                np.testing.assert_array_equal(got, reference[top:, left:], err_msg=name)


def test_the_cut_is_taken_for_windows_low_in_the_image() -> None:
    jpeg = VARIANTS["4:2:0 250x333 every 1 rows"].data
    _, cut = window_of(jpeg, 0, (200, 10, 240, 300), DecodeOptions())
    assert cut == (176, 0)  # MCU rows 0-10 cut: the window's row 199 is in row 12, 11 is context
    jpeg = VARIANTS["4:2:0 250x333 every 3 MCUs"].data
    _, cut = window_of(jpeg, 0, (200, 170, 240, 300), DecodeOptions())
    assert cut == (176, 144)  # MCU columns 0-8 cut: 169 is in column 10, 9 is context


@pytest.mark.skipif(not baseline_available(), reason="the transcoder is not built here")
@pytest.mark.parametrize("width", [64, 128, 65535])
@pytest.mark.parametrize("sampling", ["4:2:0", "4:4:4", "4:2:2"])
def test_the_build_transcoders_markers_are_cut_at(width: int, sampling: str) -> None:
    image = textured(250, 333, 9)
    transcoded = to_baseline(encode(image, sampling, 0), restart_width=width)
    assert b"\xff\xdd" in transcoded  # a DRI segment
    for shift in range(4):
        reference = whole(transcoded, shift, DecodeOptions())
        height, columns = reference.shape[:2]
        for top in range(0, height, max(height // 9, 1)):
            got, cut = window_of(transcoded, shift, (top, 3, height, columns), DecodeOptions())
            np.testing.assert_array_equal(got, reference[top:, 3:])
            if top * (1 << shift) >= 4 * 16:
                assert cut[0] > 0, f"no cut for a window at row {top}, shift {shift}"


def test_markers_that_do_not_fall_on_mcu_rows_decode_from_the_top() -> None:
    image = textured(250, 333, 3)
    per_row = mcus_per_row(333, "4:2:0")  # 21: intervals of 4 MCUs are off the grid
    jpeg = encode(image, "4:2:0", 4)
    assert per_row % 4 != 0
    reference = whole(jpeg, 0, DecodeOptions())
    got, cut = window_of(jpeg, 0, (200, 0, 250, 333), DecodeOptions())
    assert cut == (0, 0)
    np.testing.assert_array_equal(got, reference[200:])


def test_a_progressive_file_with_markers_decodes_from_the_top() -> None:
    image = cv2.cvtColor(textured(250, 333, 4), cv2.COLOR_RGB2BGR)
    params = [cv2.IMWRITE_JPEG_PROGRESSIVE, 1, cv2.IMWRITE_JPEG_RST_INTERVAL, 21]
    ok, encoded = cv2.imencode(".jpg", image, params)
    assert ok
    jpeg = encoded.tobytes()
    reference = whole(jpeg, 0, DecodeOptions())
    got, cut = window_of(jpeg, 0, (200, 0, 250, 333), DecodeOptions())
    assert cut == (0, 0)
    np.testing.assert_array_equal(got, reference[200:])


def renumbered(jpeg: bytes, which: int) -> bytes:
    """`jpeg` with its restart marker number `which` (0-based) given the wrong number."""
    start = jpeg.index(b"\xff\xda")
    start += 2 + int.from_bytes(jpeg[start + 2 : start + 4], "big")
    seen = 0
    data = bytearray(jpeg)
    for at in range(start, len(data) - 1):
        if data[at] == 0xFF and 0xD0 <= data[at + 1] <= 0xD7:
            if seen == which:
                data[at + 1] = 0xD0 + (data[at + 1] - 0xD0 + 1) % 8
                return bytes(data)
            seen += 1
    raise AssertionError("no such marker")


def test_a_marker_out_of_turn_is_not_cut_at_and_the_decode_falls_back() -> None:
    jpeg = VARIANTS["4:2:0 250x333 every 1 rows"].data
    damaged = renumbered(jpeg, 3)
    # the extension refuses it (libjpeg warns about the marker), without a cut
    with pytest.raises(ValueError, match="RST"):
        window_of(damaged, 0, (200, 0, 250, 333), DecodeOptions())
    # and the reader's decode falls back to simplejpeg, whose strict decode names the damage
    with pytest.raises(ImageDecodeError, match="found marker 0xd4 instead of RST3"):
        crop_window(damaged, (250, 333), 0, (200, 0, 250, 333), DecodeOptions())
