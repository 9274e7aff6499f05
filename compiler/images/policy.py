"""The compiler's image policy (formats/SPEC.md section 6): keep, convert or reject one input.

- A three-component (YCbCr) JPEG, upright, within `max_side`, is kept byte-for-byte once it passes
  the `check`: "structure" walks its markers (SOI, segments, frame header, scans, EOI) without
  decoding (`jpeg_structure`); "decode" adds a strict decode at the smallest DCT scale (1/8, which
  still reads every entropy-coded byte), which also catches damaged entropy-coded data.
- Any other decodable image becomes an RGB JPEG (4:2:0, `quality`): JPEGs (grayscale, CMYK/YCCK,
  EXIF-rotated, too large) are decoded by simplejpeg, at the smallest DCT scale that still covers
  the target size; PNG, WebP, BMP, TIFF and the rest by OpenCV, 16-bit scaled to 8 bits, alpha
  composited over white. EXIF orientation is applied; a longer side over `max_side` is shrunk to
  it with an area filter.
- With `baseline`, a JPEG kept as it is whose frame is progressive is kept transcoded to
  baseline instead (`baseline`: the same DCT coefficients, so the same pixels); the transcode
  reads every entropy-coded byte, so it is also that file's `decode` check.
- Anything else (empty, truncated, not an image) is a `Reject` with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import cv2
import numpy as np
import simplejpeg

from .baseline import PROGRESSIVE_FRAMES, to_baseline
from .exif import NO_ROTATION, TRANSPOSING, apply_orientation, jpeg_orientation, tiff_orientation
from .jpeg_structure import read_jpeg_structure
from .pixels import Pixels, bgr_any_to_rgb, fit_within, resize_area, to_uint8

JPEG_MAGIC = b"\xff\xd8\xff"
Check = Literal["structure", "decode"]
CHECKS: tuple[Check, ...] = ("structure", "decode")


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """The bytes to store: the input itself, or transcoded to baseline (`converted=False`),
    or a new RGB JPEG.

    `size` is the stored image's `(height, width)`; `upright_size` the input's once turned
    upright, before any shrink to `max_side` (equal to `size` unless shrunk). What mask and box
    fields of the sample are measured against; (0, 0) where unknown."""

    data: bytes
    converted: bool
    size: tuple[int, int] = field(default=(0, 0), compare=False)
    upright_size: tuple[int, int] = field(default=(0, 0), compare=False)

    @property
    def shrunk(self) -> bool:
        return self.size != self.upright_size


@dataclass(frozen=True, slots=True)
class Reject:
    """An input the compiler cannot use, and why."""

    reason: str


def prepare_image(
    data: bytes,
    *,
    max_side: int | None = None,
    quality: int = 90,
    check: Check = "structure",
    baseline: bool = False,
) -> PreparedImage | Reject:
    """Apply the image policy to the bytes of one input file. `baseline` needs the transcoder
    extension (`baseline.require_baseline`)."""
    if not data:
        return Reject("empty file")
    if data.startswith(JPEG_MAGIC):
        return _prepare_jpeg(data, max_side, quality, check, baseline)
    return _convert_other(data, max_side, quality)


def _prepare_jpeg(
    data: bytes, max_side: int | None, quality: int, check: Check, baseline: bool
) -> PreparedImage | Reject:
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
        orientation = jpeg_orientation(data)
        target = fit_within(height, width, max_side)
        if colorspace == "YCbCr" and orientation == NO_ROTATION and target == (height, width):
            structure = read_jpeg_structure(data)
            if baseline and structure.frame.marker in PROGRESSIVE_FRAMES:
                return _transcoded(data, (height, width))
            if check == "decode":
                simplejpeg.decode_jpeg(data, colorspace="GRAY", min_height=1, min_width=1)
            return PreparedImage(data, False, (height, width), (height, width))
        rgb = simplejpeg.decode_jpeg(
            data, colorspace="RGB", min_height=target[0], min_width=target[1]
        )
    except ValueError as e:
        return Reject(f"corrupt JPEG: {e}")
    return _finish(rgb, target, orientation, quality, (height, width))


def _transcoded(data: bytes, size: tuple[int, int]) -> PreparedImage | Reject:
    try:
        return PreparedImage(to_baseline(data), False, size, size)
    except ValueError as e:
        return Reject(f"progressive JPEG not transcoded to baseline: {e}")


def _convert_other(data: bytes, max_side: int | None, quality: int) -> PreparedImage | Reject:
    buffer = np.frombuffer(data, dtype=np.uint8)
    try:
        decoded, kinds, blobs = cv2.imdecodeWithMetadata(buffer, cv2.IMREAD_UNCHANGED)
    except cv2.error as e:  # e.g. a header announcing more pixels than OpenCV's limit
        return Reject(f"not a decodable image ({str(e).strip().splitlines()[-1]})")
    if decoded is None or decoded.size == 0:
        return Reject(f"not a decodable image (starts with {data[:8]!r})")
    pixels = to_uint8(decoded)
    rgb = None if pixels is None else bgr_any_to_rgb(pixels)
    if rgb is None:
        return Reject(f"unsupported pixel layout {decoded.dtype} x {decoded.shape}")
    orientation = NO_ROTATION
    for kind, blob in zip(kinds, blobs, strict=True):
        if kind == cv2.IMAGE_METADATA_EXIF:
            orientation = tiff_orientation(np.asarray(blob, dtype=np.uint8).tobytes())
    target = fit_within(rgb.shape[0], rgb.shape[1], max_side)
    return _finish(rgb, target, orientation, quality, (rgb.shape[0], rgb.shape[1]))


def _finish(
    rgb: Pixels, target: tuple[int, int], orientation: int, quality: int, full: tuple[int, int]
) -> PreparedImage:
    """Shrink (in stored orientation), turn upright, encode as a 4:2:0 RGB JPEG. `full`: the
    `(height, width)` before the shrink, in stored orientation."""
    upright = apply_orientation(resize_area(rgb, *target), orientation)
    encoded = simplejpeg.encode_jpeg(
        np.ascontiguousarray(upright), quality=quality, colorspace="RGB", colorsubsampling="420"
    )
    transposed = orientation in TRANSPOSING
    upright_full = (full[1], full[0]) if transposed else full
    return PreparedImage(bytes(encoded), True, (upright.shape[0], upright.shape[1]), upright_full)
