"""Progressive (and baseline) JPEGs made by OpenCV's libjpeg-turbo, for the transcoder's tests,
and the transcoder itself where it is built."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import cv2
import numpy as np
import pytest


def load_transcoder() -> ModuleType:
    """The `_jpeg_baseline` extension; skips the calling test module where it is not built.
    CI builds it (libjpeg-turbo's headers and a compiler, as for the crop decoder): missing is
    a failure there."""
    name = "fastpack.compiler.images._jpeg_baseline"
    if os.environ.get("FASTPACK_REQUIRE_WINDOW_DECODER") == "1":
        return importlib.import_module(name)
    module: ModuleType = pytest.importorskip(
        name,
        reason="the baseline transcoder is not built here (no compiler or libjpeg-turbo headers)",
    )
    return module


SAMPLINGS = {
    "4:2:0": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
    "4:2:2": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_422,
    "4:4:4": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444,
    "4:4:0": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440,
    "4:1:1": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_411,
}


def textured(height: int, width: int, seed: int) -> np.ndarray:
    """Gradients under colour noise: every coefficient band has something in it."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width, 1), y * 255 // max(height, 1), (x + y) % 256], -1)
    return np.clip(base + rng.integers(-60, 60, (height, width, 3)), 0, 255).astype(np.uint8)


def encode(  # noqa: PLR0913 -- mirrors: cjpeg
    image: np.ndarray,
    sampling: str = "4:2:0",
    *,
    restart: int = 0,
    progressive: bool = True,
    grey: bool = False,
    quality: int = 90,
) -> bytes:
    params = [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_RST_INTERVAL, restart]
    params += [cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)]
    if grey:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    else:
        params += [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, SAMPLINGS[sampling]]
        image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    ok, data = cv2.imencode(".jpg", image, params)
    assert ok
    return data.tobytes()


def truncated_scan(data: bytes) -> bytes:
    """`data` cut in the middle of a later scan, then EOI: the markers still walk."""
    sos = [i for i in range(len(data) - 1) if data[i : i + 2] == b"\xff\xda"]
    cut = (sos[len(sos) // 2] + sos[len(sos) // 2 + 1]) // 2
    return data[:cut] + b"\xff\xd9"
