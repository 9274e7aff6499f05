"""The window decoder (the `_jpeg_crop` extension) on hostile input: incomplete progressive
files, coefficient buffers over the memory limit and files of too many scans are refused with
a ValueError (the crop transforms then decode the whole image with simplejpeg, and give its
pixels), and window coordinates of any size are checked before any arithmetic on them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import cv2
import numpy as np
import pytest
import simplejpeg
from fastpack.reader.image import CenterCrop, RandomResizedCrop, Transform, crop_decode

from tests._child import assert_refused_in_a_child
from tests.crafted_jpeg import complete_script, first_scans, progressive_grey, without_scan

from ._window import assert_same_crops, load_window_decoder

extension = load_window_decoder()


def photo(height: int, width: int) -> bytes:
    """A blurred noisy gradient, progressive 4:2:0 (libjpeg's script: 10 scans)."""
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // width, y * 255 // height, (x + y) % 256], -1)
    noisy = np.clip(base + rng.integers(-60, 60, (height, width, 3)), 0, 255).astype(np.uint8)
    image = cv2.GaussianBlur(noisy, (5, 5), 0)
    params = [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_PROGRESSIVE, 1]
    ok, data = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), params)
    assert ok
    return data.tobytes()


PHOTO = photo(240, 320)


NEVER_REFINED = "was never refined: its last 1 bit(s) are missing"
INCOMPLETE = {
    "EOI after 3 scans": (
        first_scans(PHOTO, 3),
        f"coefficient 0 (zigzag order) of component 1 of 3 {NEVER_REFINED}",
    ),
    "the Cb refinement dropped": (
        without_scan(PHOTO, 8),
        f"coefficient 1 (zigzag order) of component 2 of 3 {NEVER_REFINED}",
    ),
    "the last scan dropped": (
        without_scan(PHOTO, 9),
        f"coefficient 1 (zigzag order) of component 1 of 3 {NEVER_REFINED}",
    ),
    "crafted: AC 1-63 never sent": (
        progressive_grey(64, 64, complete_script(2)[:1]),
        "coefficient 1 (zigzag order) of component 1 of 1 was never sent",
    ),
}


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


# y0, x0, rows, columns, scaled height and width, where the decoded region starts
Result = tuple[int, int, int, int, int, int, tuple[int, int]]


def window(data: bytes, shift: int = 0, **limits: int) -> Result:
    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    buffer = np.empty((height + 2) * (width + 16) * 3, np.uint8)
    result: Result = extension.decode_window(data, shift, 0, 0, height, width, buffer, **limits)
    return result


@pytest.mark.parametrize("name", list(INCOMPLETE))
def test_incomplete_progressive_files_are_refused(name: str) -> None:
    data, reason = INCOMPLETE[name]
    simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True)  # a decoder takes them
    for shift in range(4):
        with pytest.raises(ValueError, match=exactly(f"incomplete progressive JPEG: {reason}")):
            window(data, shift)


def test_the_complete_file_and_baseline_files_decode() -> None:
    assert window(PHOTO)[2:] == (240, 320, 240, 320, (0, 0))
    pixels = cv2.imdecode(np.frombuffer(PHOTO, np.uint8), cv2.IMREAD_COLOR)
    assert pixels is not None
    ok, baseline = cv2.imencode(".jpg", pixels)
    assert ok
    assert window(baseline.tobytes())[2:] == (240, 320, 240, 320, (0, 0))


@pytest.fixture
def window_decode_on() -> Iterator[None]:
    previous = crop_decode.use_window_decode(True)
    yield
    crop_decode.use_window_decode(previous)


@pytest.mark.usefixtures("window_decode_on")
@pytest.mark.parametrize("name", list(INCOMPLETE)[:3])
def test_crops_of_incomplete_files_are_those_of_the_whole_decode(name: str) -> None:
    """The window decoder refuses, the crop falls back to simplejpeg's whole, smoothed decode:
    the same pixels as with the window decoder turned off."""
    data = INCOMPLETE[name][0]
    transforms: list[Transform] = [
        RandomResizedCrop(96, scale=(0.05, 0.3)),
        CenterCrop(128),
        CenterCrop(64, resize=80),
    ]
    rng = np.random.default_rng(11)
    for transform in transforms:
        assert_same_crops(transform, data, rng, 5)


def test_the_coefficients_memory_is_limited_before_it_is_allocated() -> None:
    # 4096 x 4096 grey, progressive: 32 MiB of coefficients
    data = progressive_grey(4096, 4096, complete_script(2))
    with pytest.raises(
        ValueError,
        match=r"^the image's coefficients need more than the memory limit of 8388608 bytes "
        r"\(max_memory\)$",
    ):
        window(data, 3, max_memory=8 << 20)
    assert window(data, 3)[4:6] == (512, 512)  # the default: 1 GiB
    assert extension.DEFAULT_MAX_MEMORY == 1 << 30


def test_a_huge_progressive_header_is_refused_before_its_memory_is_touched() -> None:
    """32768 x 32768 grey in a 2 MB file: 2 GiB of coefficients, over the 1 GiB default."""
    assert_refused_in_a_child(
        "import numpy as np\n"
        "from fastpack.reader.image import _jpeg_crop\n"
        "buffer = np.empty(100_000, np.uint8)",
        "_jpeg_crop.decode_window(data, 3, 0, 0, 8, 8, buffer)",
        progressive_grey(32768, 32768, complete_script(2)),
        message=(
            "the image's coefficients need more than the memory limit of 1073741824 bytes "
            "(max_memory)"
        ),
        grown_kib_below=64 * 1024,
    )


def test_more_than_500_scans_are_refused() -> None:
    assert extension.DEFAULT_MAX_SCANS == 500
    assert window(progressive_grey(64, 64, complete_script(500)))[4:6] == (64, 64)
    with pytest.raises(ValueError, match=r"^the JPEG has more than 500 scans \(max_scans\)$"):
        window(progressive_grey(64, 64, complete_script(501)))
    with pytest.raises(ValueError, match="more than 9 scans"):
        window(PHOTO, max_scans=9)
    assert window(PHOTO, max_scans=10)


BIG = 1 << 100
LIMIT = (1 << 30) - 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((0, 1 << 62, 0, 1 << 62, 1), f"top must be 0 to {LIMIT}, got {1 << 62}"),
        ((0, 0, BIG, 1, 1), f"left must be 0 to {LIMIT}, got {BIG}"),
        ((0, -1, 0, 1, 1), f"top must be 0 to {LIMIT}, got -1"),
        ((0, 0, 0, (1 << 63) - 1, 1), f"height must be 1 to {LIMIT}, got {(1 << 63) - 1}"),
        ((0, 0, 0, 1, BIG), f"width must be 1 to {LIMIT}, got {BIG}"),
        ((0, 0, 0, -BIG, 1), f"the window must be at least 1x1, got {-BIG}x1"),
        ((0, 0, 0, 5, 0), "the window must be at least 1x1, got 5x0"),
        ((BIG, 0, 0, 1, 1), f"shift must be 0 to 3, got {BIG}"),
        ((-1, 0, 0, 1, 1), "shift must be 0 to 3, got -1"),
    ],
)
def test_window_arguments_of_any_size_are_value_errors(
    arguments: tuple[int, int, int, int, int], message: str
) -> None:
    buffer = np.empty(100_000, np.uint8)
    shift, top, left, height, width = arguments
    with pytest.raises(ValueError, match=exactly(message)):
        extension.decode_window(PHOTO, shift, top, left, height, width, buffer)


def test_the_largest_window_is_clamped_to_the_image() -> None:
    buffer = np.empty(250 * 330 * 3, np.uint8)
    got = extension.decode_window(PHOTO, 0, LIMIT, LIMIT, LIMIT, LIMIT, buffer)
    assert got == (
        238,
        288,
        2,
        32,
        240,
        320,
        (0, 0),
    )  # the last row, one row of context, 32 columns
    y0, x0, rows, columns, _, _, _ = extension.decode_window(PHOTO, 0, 0, 0, LIMIT, LIMIT, buffer)
    assert (y0, x0, rows, columns) == (0, 0, 240, 320)
    whole = simplejpeg.decode_jpeg(PHOTO, colorspace="RGB")
    np.testing.assert_array_equal(buffer[: 240 * 320 * 3].reshape(240, 320, 3), whole)


@pytest.mark.parametrize(
    ("keyword", "value", "message"),
    [
        ("max_memory", 0, "max_memory must be 1 to 9223372036854775807, got 0"),
        ("max_memory", BIG, f"max_memory must be 1 to 9223372036854775807, got {BIG}"),
        ("max_scans", 0, "max_scans must be 1 to 2147483647, got 0"),
    ],
)
def test_limits_out_of_range_are_value_errors(keyword: str, value: int, message: str) -> None:
    with pytest.raises(ValueError, match=exactly(message)):
        window(PHOTO, **{keyword: value})
    with pytest.raises(TypeError):
        window(PHOTO, **{keyword: 2.0})  # type: ignore[arg-type]
