"""The window decoder (the `_jpeg_crop` extension) gives exactly the pixels of a whole-image
decode at the same DCT scale cut to the same window, across subsamplings, sizes that are not a
multiple of the MCU, windows at the image's edges, restart markers and progressive files; and
the crop transforms give the same output with it and with simplejpeg alone."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import cv2
import numpy as np
import pytest
import simplejpeg
from fastpack.reader.image import CenterCrop, RandomResizedCrop, Transform, crop_decode
from fastpack.reader.image.decode import DecodeOptions, decode_scaled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ._window import assert_same_crops, decode_window, load_window_decoder

extension = load_window_decoder()

SAMPLINGS = {
    "4:2:0": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
    "4:2:2": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422,
    "4:4:4": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444,
    "4:4:0": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440,
    "4:1:1": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_411,
}
SIZES = [(77, 131), (45, 17), (250, 333), (16, 16), (9, 200)]


def textured(height: int, width: int, seed: int) -> np.ndarray:
    """Colour noise over gradients: chroma that changes from pixel to pixel, so that any
    upsampling difference at a window's edge shows."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width, 1), y * 255 // max(height, 1), (x + y) % 256], -1)
    noise = rng.integers(-60, 60, (height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def encode(
    image: np.ndarray,
    sampling: str = "4:2:0",
    *,
    restart: int = 0,
    progressive: bool = False,
    grey: bool = False,
) -> bytes:
    params = [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_RST_INTERVAL, restart]
    params += [cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)]
    if grey:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    else:
        params += [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, SAMPLINGS[sampling]]
        image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    ok, data = cv2.imencode(".jpg", image, params)
    assert ok
    return data.tobytes()


def variants() -> Iterator[tuple[str, bytes]]:
    for i, (h, w) in enumerate(SIZES):
        image = textured(h, w, i)
        for sampling in SAMPLINGS:
            yield f"{sampling} {h}x{w}", encode(image, sampling)
        yield f"grey {h}x{w}", encode(image, grey=True)
        yield f"4:2:0 restart 1 {h}x{w}", encode(image, restart=1)
        yield f"4:2:2 restart 3 {h}x{w}", encode(image, "4:2:2", restart=3)
        yield f"4:2:0 progressive {h}x{w}", encode(image, progressive=True)
        yield f"grey progressive {h}x{w}", encode(image, progressive=True, grey=True)


VARIANTS = dict(variants())


def header_size(data: bytes) -> tuple[int, int]:
    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    return int(height), int(width)


def whole(data: bytes, shift: int, options: DecodeOptions) -> np.ndarray:
    height, width = header_size(data)
    image: np.ndarray = decode_scaled(data, height, width, shift, options).copy()
    return image


def window_of(
    data: bytes, shift: int, window: tuple[int, int, int, int], options: DecodeOptions
) -> np.ndarray:
    """The extension's decode of `window` (top, left, bottom, right), cut to it."""
    return decode_window(extension, data, shift, window, options)[0]


OPTIONS = [
    DecodeOptions(),
    DecodeOptions(fastdct=True),
    DecodeOptions(fastupsample=True),
    DecodeOptions(fastdct=True, fastupsample=True),
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(VARIANTS)),
    shift=st.integers(0, 3),
    options=st.sampled_from(OPTIONS),
    data=st.data(),
)
def test_a_window_has_the_pixels_of_the_whole_decode(
    name: str, shift: int, options: DecodeOptions, data: st.DataObject
) -> None:
    jpeg = VARIANTS[name]
    reference = whole(jpeg, shift, options)
    height, width = reference.shape[:2]
    top = data.draw(st.integers(0, height - 1))
    left = data.draw(st.integers(0, width - 1))
    bottom = data.draw(st.integers(top + 1, height))
    right = data.draw(st.integers(left + 1, width))
    got = window_of(jpeg, shift, (top, left, bottom, right), options)
    np.testing.assert_array_equal(got, reference[top:bottom, left:right], err_msg=name)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_windows_at_every_edge_and_corner(name: str) -> None:
    jpeg = VARIANTS[name]
    for shift in range(4):
        reference = whole(jpeg, shift, DecodeOptions())
        h, w = reference.shape[:2]
        rows = {(0, 1), (0, h), (h - 1, h), (0, max(h // 2, 1)), (h // 2, h)}
        columns = {(0, 1), (0, w), (w - 1, w), (0, max(w // 2, 1)), (w // 2, w)}
        for top, bottom in rows:
            for left, right in columns:
                if bottom <= top or right <= left:
                    continue
                got = window_of(jpeg, shift, (top, left, bottom, right), DecodeOptions())
                np.testing.assert_array_equal(
                    got,
                    reference[top:bottom, left:right],
                    err_msg=f"{name} shift {shift} window {(top, left, bottom, right)}",
                )


def test_the_decoder_reports_the_scaled_size() -> None:
    jpeg = VARIANTS["4:2:0 77x131"]
    buffer = np.empty(100_000, np.uint8)
    for shift in range(4):
        *_, height, width, _ = extension.decode_window(jpeg, shift, 0, 0, 1, 1, buffer)
        assert (height, width) == (-(-77 >> shift), -(-131 >> shift))


@pytest.fixture
def window_decode_on() -> Iterator[None]:
    previous = crop_decode.use_window_decode(True)
    yield
    crop_decode.use_window_decode(previous)


def photos() -> list[bytes]:
    out = []
    for i, (h, w) in enumerate([(480, 360), (333, 500), (97, 1000), (224, 224)]):
        image = cv2.GaussianBlur(textured(h, w, 10 + i), (5, 5), 0)
        for sampling in ("4:2:0", "4:4:4"):
            out.append(encode(image, sampling))
        out.append(encode(image, progressive=True))
        out.append(encode(image, grey=True))
    return out


@pytest.mark.usefixtures("window_decode_on")
@pytest.mark.parametrize("max_upscale", [1.0, 1.5, 2.0])
@pytest.mark.parametrize("fastupsample", [False, True])
def test_crops_are_identical_with_and_without_the_window_decoder(
    max_upscale: float, fastupsample: bool
) -> None:
    transforms: list[Transform] = [
        RandomResizedCrop(224, max_upscale=max_upscale, fastupsample=fastupsample),
        RandomResizedCrop((64, 96), scale=(0.01, 0.2), max_upscale=max_upscale),
        CenterCrop(224, max_upscale=max_upscale),
    ]
    rng = np.random.default_rng(7)
    for jpeg in photos():
        for transform in transforms:
            assert_same_crops(transform, jpeg, rng, 6)


def test_bad_data_is_a_value_error_naming_what_is_wrong() -> None:
    buffer = np.empty(100_000, np.uint8)
    with pytest.raises(ValueError, match="Not a JPEG file"):
        extension.decode_window(b"\x89PNG\r\n\x1a\n" + bytes(100), 0, 0, 0, 1, 1, buffer)
    jpeg = VARIANTS["4:2:0 250x333"]
    with pytest.raises(ValueError, match=r"(?i)premature end|ended"):
        extension.decode_window(jpeg[: len(jpeg) // 2], 0, 200, 0, 50, 333, buffer)
    with pytest.raises(ValueError, match="shift must be 0 to 3"):
        extension.decode_window(jpeg, 4, 0, 0, 1, 1, buffer)
    with pytest.raises(ValueError, match="at least 1x1"):
        extension.decode_window(jpeg, 0, 0, 0, 0, 1, buffer)
    with pytest.raises(ValueError, match="output buffer holds 10 bytes"):
        extension.decode_window(jpeg, 0, 0, 0, 10, 10, np.empty(10, np.uint8))


@pytest.mark.usefixtures("window_decode_on")
def test_a_crop_of_damaged_data_raises_what_simplejpeg_raises() -> None:
    jpeg = VARIANTS["4:2:0 250x333"]
    damaged = jpeg[: len(jpeg) // 2]
    transform = CenterCrop(200)
    crop_decode.use_window_decode(False)
    with pytest.raises(ValueError, match=r"(?i)premature|corrupt|jpeg") as without:
        transform(damaged)
    crop_decode.use_window_decode(True)
    with pytest.raises(ValueError, match=r"(?i)premature|corrupt|jpeg") as with_window:
        transform(damaged)
    assert str(with_window.value) == str(without.value)


def test_the_decode_releases_the_gil() -> None:
    image = textured(3000, 3000, 3)
    jpeg = encode(image, "4:4:4")
    buffer = np.empty(3000 * 3000 * 3, np.uint8)
    started, done = threading.Event(), threading.Event()

    def decode() -> None:
        started.set()
        for _ in range(3):
            extension.decode_window(jpeg, 0, 0, 0, 3000, 3000, buffer)
        done.set()

    thread = threading.Thread(target=decode)
    thread.start()
    started.wait()
    spins = 0
    while not done.is_set():
        spins += 1
    thread.join()
    # Holding the GIL, three decodes of 9 MP would let this loop run only between them.
    assert spins > 10_000


def test_decoder_says_which_runs(window_decode_on: None) -> None:
    assert crop_decode.decoder().name == "libjpeg-turbo window"
    assert str(crop_decode.decoder()).startswith("libjpeg-turbo window 2.")
    crop_decode.use_window_decode(False)
    assert crop_decode.decoder().name == "simplejpeg"
    assert "turned off" in str(crop_decode.decoder())


@pytest.mark.parametrize(
    ("value", "expected"), [("simplejpeg", "simplejpeg"), ("auto", "libjpeg-turbo window")]
)
def test_the_environment_chooses_the_decoder(value: str, expected: str) -> None:
    code = "from fastpack.reader.image import crop_decode; print(crop_decode.decoder().name)"
    env = {**os.environ, crop_decode.ENVIRONMENT_VARIABLE: value}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == expected


def test_an_unknown_decoder_in_the_environment_is_refused() -> None:
    code = "import fastpack.reader.image.crop_decode"
    env = {**os.environ, crop_decode.ENVIRONMENT_VARIABLE: "pil"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "FASTPACK_JPEG_DECODER must be 'auto' or 'simplejpeg', got 'pil'" in result.stderr
