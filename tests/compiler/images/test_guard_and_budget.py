"""The image policy's one door for input bytes (images/guard.py) and its pixel budget, on real
encoded images: whatever a decoder or parser raises becomes the reject's reason, and an image
whose header declares more samples than the budget is rejected before a decoder runs."""

from __future__ import annotations

import importlib
import re

import cv2
import numpy as np
import pytest
import simplejpeg
from fastpack.compiler import PreparedImage, Reject, prepare_image
from fastpack.compiler.images.guard import InputError, describe, guarded, guarded_value
from fastpack.compiler.images.input_header import UnreadableHeaderError, input_header
from fastpack.compiler.images.masks import SegmentationError, render_mask
from fastpack.formats import FieldValueError
from fastpack.formats.image_header import ImageHeader

from tests.compiler._helpers import gray_jpeg
from tests.conftest import jpeg_bytes, synthetic_rgb
from tests.reader.image._hostile import HUGE, huge_claim, unnamed_sampling

KEY_ERROR = "corrupt JPEG: KeyError: 6 (raised by simplejpeg.decode_jpeg_header)"


def test_a_frame_header_simplejpeg_cannot_name_is_a_reject_with_the_error() -> None:
    data = unnamed_sampling()
    with pytest.raises(KeyError):
        simplejpeg.decode_jpeg_header(data)  # what stopped builds with a traceback
    for check in ("structure", "decode"):
        assert prepare_image(data, check=check) == Reject(KEY_ERROR)
    assert prepare_image(data, max_side=16) == Reject(KEY_ERROR)


def test_the_guard_keeps_a_value_errors_words_and_names_any_other_error() -> None:
    with pytest.raises(InputError, match=f"^{re.escape(KEY_ERROR)}$") as refused:
        guarded("corrupt JPEG", simplejpeg.decode_jpeg_header, unnamed_sampling())
    assert isinstance(refused.value.__cause__, KeyError)
    assert isinstance(refused.value, FieldValueError)
    premature = r"^corrupt JPEG: Corrupt JPEG data: premature end of data segment$"
    with pytest.raises(InputError, match=premature):
        guarded("corrupt JPEG", simplejpeg.decode_jpeg, jpeg_bytes()[:-300] + b"\xff\xd9")
    error = cv2.error("OpenCV(5.0.0) loadsave.cpp:1: error: (-215:Assertion failed)\nsize > 0\n")
    assert describe(error) == "error: size > 0"
    assert describe(ValueError("libjpeg's words")) == "libjpeg's words"


def test_the_machines_errors_pass_the_guard() -> None:
    with pytest.raises(MemoryError):
        guarded("x", np.empty, 1 << 62, np.uint8)
    with pytest.raises(ImportError):
        guarded("x", importlib.import_module, "fastpack.compiler.images._no_such_extension")


def test_a_field_values_own_error_passes_as_it_is() -> None:
    with pytest.raises(FieldValueError, match=r"^a message$") as refused:
        guarded_value(_raise, FieldValueError("a message"))
    assert not isinstance(refused.value, InputError)
    with pytest.raises(InputError, match=r"^KeyError: 'x' \(raised by "):
        guarded_value(_raise, KeyError("x"))


def _raise(error: Exception) -> None:
    raise error


def test_a_jpeg_over_the_budget_is_rejected_with_the_numbers() -> None:
    data = jpeg_bytes(48, 40)
    samples = 48 * 40 * 3
    assert prepare_image(data, pixel_budget=samples) == PreparedImage(data, converted=False)
    assert prepare_image(data, pixel_budget=samples - 1) == Reject(
        "too large: 40 x 48 pixels x 3 components = 5,760 samples, over the pixel budget of "
        "5,759 (--pixel-budget)"
    )
    gray = gray_jpeg(40, 56)  # converted: one component decoded
    assert isinstance(prepare_image(gray, pixel_budget=40 * 56), PreparedImage)
    assert isinstance(prepare_image(gray, pixel_budget=40 * 56 - 1), Reject)


@pytest.mark.parametrize("baseline", [False, True])
@pytest.mark.parametrize("check", ["structure", "decode"])
def test_a_small_file_claiming_32768_squared_is_rejected_before_any_decode(
    check: str, baseline: bool
) -> None:
    data = huge_claim()
    if baseline:
        pytest.importorskip("fastpack.compiler.images._jpeg_baseline")
    result = prepare_image(data, check=check, baseline=baseline)  # type: ignore[arg-type]
    assert result == Reject(
        f"too large: {HUGE} x {HUGE} pixels x 3 components = 3,221,225,472 samples, over the "
        "pixel budget of 268,435,456 (--pixel-budget)"
    )


def encode(extension: str, image: np.ndarray) -> bytes:
    ok, data = cv2.imencode(extension, image)
    assert ok, extension
    return data.tobytes()


BGR = cv2.cvtColor(synthetic_rgb(37, 53, 8), cv2.COLOR_RGB2BGR)
OTHER_FORMATS = {
    "png": encode(".png", BGR),
    "webp-lossy": encode(".webp", BGR),
    "webp-lossless": bytes(cv2.imencode(".webp", BGR, [cv2.IMWRITE_WEBP_QUALITY, 101])[1]),
    "bmp": encode(".bmp", BGR),
    "tiff": encode(".tiff", BGR),
    "gif": encode(".gif", BGR),
    "ppm": encode(".ppm", BGR),
    "pgm": encode(".pgm", cv2.cvtColor(BGR, cv2.COLOR_BGR2GRAY)),
    "sun-raster": encode(".ras", BGR),
}


@pytest.mark.parametrize("name", list(OTHER_FORMATS))
def test_other_formats_declare_their_size_before_opencv_decodes_them(name: str) -> None:
    data = OTHER_FORMATS[name]
    header = input_header(data)
    assert header is not None
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert decoded is not None
    channels = 1 if decoded.ndim == 2 else decoded.shape[2]
    assert (header.height, header.width) == decoded.shape[:2] == (37, 53)
    assert channels <= header.components
    assert isinstance(prepare_image(data, pixel_budget=header.samples), PreparedImage)
    rejected = prepare_image(data, pixel_budget=header.samples - 1)
    assert isinstance(rejected, Reject)
    assert rejected.reason.startswith("too large: 53 x 37 pixels x "), rejected


def test_a_format_whose_size_is_not_read_here_is_none() -> None:
    assert input_header(b"\x00\x00\x00 ftypavif" + bytes(40)) is None
    assert input_header(b"hello") is None


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"BM" + bytes(10), "not a decodable image: BMP cut off before its info header"),
        (b"II*\x00\xff\xff\xff\xff", "not a decodable image: TIFF whose first IFD (offset"),
        (b"RIFF\x00\x00\x00\x00WEBPXXXX" + bytes(20), "not a decodable image: WebP whose first"),
        (b"P6 a b", "not a decodable image: PNM whose header gives no width and height"),
        (b"GIF89a\x01", "not a decodable image: GIF cut off before its logical screen size"),
    ],
    ids=["bmp", "tiff", "webp", "pnm", "gif"],
)
def test_a_header_that_gives_no_size_is_a_reject(data: bytes, reason: str) -> None:
    with pytest.raises(UnreadableHeaderError):
        input_header(data)
    result = prepare_image(data)
    assert isinstance(result, Reject)
    assert result.reason.startswith(reason), result


def test_input_header_of_a_png_is_the_formats_reading() -> None:
    assert input_header(OTHER_FORMATS["png"]) == ImageHeader(37, 53, 3, False)


def test_a_mask_over_the_budget_or_of_no_size_is_refused_before_it_is_allocated() -> None:
    pytest.importorskip("pycocotools")
    square = [[0.0, 0.0, 4.0, 0.0, 4.0, 4.0]]
    assert render_mask(8, 8, [(1, square)], pixel_budget=64).shape == (8, 8)
    with pytest.raises(
        SegmentationError,
        match=r"^a mask of 100000 x 100000 pixels = 10,000,000,000 samples, over the pixel "
        r"budget of 268,435,456$",
    ):
        render_mask(100_000, 100_000, [(1, square)])
    with pytest.raises(SegmentationError, match=r"^a mask of 8.5 x 8 pixels: sizes are ints"):
        render_mask(8, 8.5, [(1, square)])  # type: ignore[arg-type]
    # pycocotools rasterizes at 5x in 32-bit ints: this polygon ended the process (SIGSEGV)
    far = [[1e308, 1e308, -1e308, 0.0, 0.0, 5.0]]
    with pytest.raises(
        SegmentationError,
        match=r"^instance 0: polygon 0 has the point \(1e\+308, 1e\+308\), more than the "
        r"image's size \(8 x 8\) outside it$",
    ):
        render_mask(8, 8, [(1, far)])
    assert render_mask(8, 8, [(1, [[-8.0, -8.0, 16.0, 0.0, 0.0, 16.0]])]).all()  # the edge
