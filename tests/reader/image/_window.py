"""The window decoder (the `_jpeg_crop` extension) in tests: loading it, turning it on or off
around a block, checking that a crop gives the same pixels with it as with simplejpeg's whole
decode, and what a call gives on either path (its result or the exception it raised)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy as np
import pytest
import simplejpeg
from fastpack.reader.image import Transform, crop_decode
from fastpack.reader.image.decode import DecodeOptions


def load_window_decoder() -> ModuleType:
    """The `_jpeg_crop` extension; skips the calling test module where it is not built. CI
    builds it (FASTPACK_REQUIRE_WINDOW_DECODER=1): missing is a failure there."""
    name = "fastpack.reader.image._jpeg_crop"
    if os.environ.get("FASTPACK_REQUIRE_WINDOW_DECODER") == "1":
        return importlib.import_module(name)
    module: ModuleType = pytest.importorskip(
        name, reason="the window decoder is not built here (no compiler or libjpeg-turbo headers)"
    )
    return module


@contextmanager
def window_decode(enabled: bool) -> Iterator[None]:
    """Crops decode through the window decoder (`enabled`, where built) or simplejpeg inside the
    block; the previous setting comes back after it."""
    previous = crop_decode.use_window_decode(enabled)
    try:
        yield
    finally:
        crop_decode.use_window_decode(previous)


def assert_same_crops(
    transform: Transform, data: bytes, rng: np.random.Generator, times: int
) -> None:
    """`transform` on `data`, for `times` draws from `rng`, gives the same pixels through the
    window decoder as through simplejpeg's whole decode. Leaves the window decoder on."""
    for _ in range(times):
        draws = list(rng.random(transform.draws)) if transform.draws else None
        crop_decode.use_window_decode(False)
        expected = transform(data, draws).copy()
        crop_decode.use_window_decode(True)
        np.testing.assert_array_equal(transform(data, draws), expected)


def outcome(call: Callable[[], object]) -> object:
    """What `call` returns, or the exception it raises."""
    try:
        return call()
    except Exception as e:
        return e


def decode_window(
    extension: ModuleType,
    data: bytes,
    shift: int,
    window: tuple[int, int, int, int],
    options: DecodeOptions,
) -> tuple[np.ndarray, tuple[int, int]]:
    """The extension's decode of `window` (top, left, bottom, right) at `1 / 2**shift`, cut to
    it, and where the region it entropy-decoded starts (full-size rows and columns left out
    above and left of it)."""
    top, left, bottom, right = window
    width = simplejpeg.decode_jpeg_header(data)[1]
    buffer = np.empty((bottom - top + 2) * (width + 16) * 3, np.uint8)
    y0, x0, rows, columns, _, _, start = extension.decode_window(
        data,
        shift,
        top,
        left,
        bottom - top,
        right - left,
        buffer,
        fastdct=options.fastdct,
        fastupsample=options.fastupsample,
    )
    block = buffer[: rows * columns * 3].reshape(rows, columns, 3)
    region = block[top - y0 : bottom - y0, left - x0 : right - x0]
    return region, (int(start[0]), int(start[1]))
