"""Pixel conversions of the image policy: any OpenCV decode to RGB uint8, and shrinking."""

from __future__ import annotations

from typing import Any, cast

import cv2
import numpy as np
import numpy.typing as npt

Pixels = npt.NDArray[np.uint8]
_GRAY_NDIM = 2  # OpenCV decodes one channel to a 2-D array
_BGR, _BGRA = 3, 4  # channel counts


def fit_within(height: int, width: int, max_side: int | None) -> tuple[int, int]:
    """`(height, width)` shrunk so the longer side equals `max_side` (unchanged if within it)."""
    longer = max(height, width)
    if max_side is None or longer <= max_side:
        return height, width

    def scale(n: int) -> int:  # round(n * max_side / longer), in integers for determinism
        return max(1, (2 * n * max_side + longer) // (2 * longer))

    return scale(height), scale(width)


def resize_area(pixels: Pixels, height: int, width: int) -> Pixels:
    if pixels.shape[:2] == (height, width):
        return pixels
    return cast(Pixels, cv2.resize(pixels, (width, height), interpolation=cv2.INTER_AREA))


def to_uint8(pixels: npt.NDArray[Any]) -> Pixels | None:
    """8-bit samples: 16-bit scaled by 255/65535, floats read as [0, 1]; None for other types."""
    if pixels.dtype == np.uint8:
        return pixels
    if pixels.dtype == np.uint16:
        return ((pixels.astype(np.uint32) + 128) // 257).astype(np.uint8)
    if pixels.dtype in (np.float32, np.float64):
        return np.clip(pixels.astype(np.float64) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return None


def over_white(bgra: Pixels) -> Pixels:
    """Composite a BGRA image over a white background, with integer rounding; returns BGR."""
    color = bgra[..., :3].astype(np.uint32)
    alpha = bgra[..., 3:].astype(np.uint32)
    return ((color * alpha + 255 * (255 - alpha) + 127) // 255).astype(np.uint8)


def bgr_any_to_rgb(pixels: Pixels) -> Pixels | None:
    """RGB from OpenCV's gray, BGR or BGRA layouts; None for other channel counts."""
    channels = 1 if pixels.ndim == _GRAY_NDIM else pixels.shape[2]
    if channels == 1:
        return cast(Pixels, cv2.cvtColor(pixels.reshape(pixels.shape[:2]), cv2.COLOR_GRAY2RGB))
    if channels == _BGRA:
        pixels = over_white(pixels)
    elif channels != _BGR:
        return None
    return cast(Pixels, cv2.cvtColor(pixels, cv2.COLOR_BGR2RGB))
