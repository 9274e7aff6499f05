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
  reads every entropy-coded byte, so it is also that file's `decode` check. Where the
  transcode would not decode to the same pixels (`TranscodeNotLosslessError`: an incomplete
  progressive file), the input is kept as it was, with the reason as its `note`.
- With `restart_width` (pixels, > 0), every JPEG kept as it is, progressive or not, is
  transcoded so, with restart markers that split each MCU row into intervals about that wide
  (the reader's window decode then decodes only the intervals around a crop), under the same
  rule for a progressive file; a sequential file's transcode, and that of a JPEG the policy
  encodes itself, holds exactly the coefficients read, so it is stored without the pixel
  check.
- Before any decoder allocates, the size the header declares (a JPEG's frame header, the
  others' by `input_header`) is checked against `pixel_budget` (samples: width x height x
  components, `fastpack.formats.image_header`): an image over it is a `Reject` with the numbers.
- Anything else (empty, truncated, not an image) is a `Reject` with its reason. Every decoder and
  parser call on the input's bytes runs through `guard.guarded`, so whatever one raises becomes
  the reject's reason; only a MemoryError (the machine's) passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import cv2
import numpy as np
import simplejpeg
from fastpack.formats import PixelBudgetError
from fastpack.formats.image_header import (
    DEFAULT_PIXEL_BUDGET,
    ImageHeader,
    check_pixel_budget,
    jpeg_header,
)

from .baseline import (
    DEFAULT_MAX_MEMORY,
    PROGRESSIVE_FRAMES,
    TranscodeNotLosslessError,
    to_baseline,
    to_baseline_lossless,
)
from .exif import NO_ROTATION, TRANSPOSING, apply_orientation, jpeg_orientation, tiff_orientation
from .guard import InputError, guarded
from .input_header import input_header
from .jpeg_structure import read_jpeg_structure
from .pixels import Pixels, bgr_any_to_rgb, fit_within, resize_area, to_uint8

JPEG_MAGIC = b"\xff\xd8\xff"
Check = Literal["structure", "decode"]
CHECKS: tuple[Check, ...] = ("structure", "decode")
BUDGET_OPTION = "--pixel-budget"
_CORRUPT_JPEG = "corrupt JPEG"
_NOT_DECODABLE = "not a decodable image"
_NOT_TRANSCODED = "progressive JPEG not transcoded to baseline"
_NOT_RESTARTED = "JPEG not transcoded with restart markers"
_NOT_CONVERTED = "not converted to RGB JPEG"
# The transcoder's memory bound for an image within the budget: its coefficient buffers (2 bytes
# per sample) and its output, with room; never under the extension's own default.
_TRANSCODE_BYTES_PER_SAMPLE = 4


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """The bytes to store: the input itself, or transcoded to baseline (`converted=False`),
    or a new RGB JPEG.

    `size` is the stored image's `(height, width)`; `upright_size` the input's once turned
    upright, before any shrink to `max_side` (equal to `size` unless shrunk). What mask and box
    fields of the sample are measured against; (0, 0) where unknown. `note`: why the input is
    stored otherwise than the options asked (kept as it was where `baseline` could not transcode
    it losslessly), None when it is stored as asked."""

    data: bytes
    converted: bool
    size: tuple[int, int] = field(default=(0, 0), compare=False)
    upright_size: tuple[int, int] = field(default=(0, 0), compare=False)
    note: str | None = field(default=None, compare=False)

    @property
    def shrunk(self) -> bool:
        return self.size != self.upright_size


@dataclass(frozen=True, slots=True)
class Reject:
    """An input the compiler cannot use, and why."""

    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class _Policy:
    max_side: int | None
    quality: int
    check: Check
    baseline: bool
    restart_width: int
    pixel_budget: int


def prepare_image(  # noqa: PLR0913 -- keyword inputs
    data: bytes,
    *,
    max_side: int | None = None,
    quality: int = 90,
    check: Check = "structure",
    baseline: bool = False,
    restart_width: int = 0,
    pixel_budget: int = DEFAULT_PIXEL_BUDGET,
) -> PreparedImage | Reject:
    """Apply the image policy to the bytes of one input file. `baseline` and `restart_width`
    need the transcoder extension (`baseline.require_baseline`). Never raises for the input's
    content; a MemoryError is the machine's, and passes."""
    if not data:
        return Reject("empty file")
    policy = _Policy(
        max_side=max_side,
        quality=quality,
        check=check,
        baseline=baseline,
        restart_width=restart_width,
        pixel_budget=pixel_budget,
    )
    try:
        if data.startswith(JPEG_MAGIC):
            return _prepare_jpeg(data, policy)
        return _convert_other(data, policy)
    except InputError as e:
        return Reject(str(e))
    except PixelBudgetError as e:
        return Reject(f"too large: {e}")


def _within_budget(header: ImageHeader, policy: _Policy) -> None:
    check_pixel_budget(header, policy.pixel_budget, BUDGET_OPTION)


def _prepare_jpeg(data: bytes, policy: _Policy) -> PreparedImage | Reject:
    _within_budget(guarded(_CORRUPT_JPEG, jpeg_header, data), policy)
    height, width, colorspace, _ = guarded(_CORRUPT_JPEG, simplejpeg.decode_jpeg_header, data)
    orientation = guarded(_CORRUPT_JPEG, jpeg_orientation, data)
    target = fit_within(height, width, policy.max_side)
    size = (height, width)
    if colorspace == "YCbCr" and orientation == NO_ROTATION and target == size:
        structure = guarded(_CORRUPT_JPEG, read_jpeg_structure, data)
        progressive = structure.frame.marker in PROGRESSIVE_FRAMES
        if policy.restart_width or (policy.baseline and progressive):
            failure = _NOT_RESTARTED if policy.restart_width else _NOT_TRANSCODED
            transcoded = guarded(failure, _transcode, data, policy, progressive)
            if isinstance(transcoded, bytes):
                return PreparedImage(transcoded, False, size, size)
            wanted = "with restart markers" if policy.restart_width else "to baseline"
            note = f"kept as it was, not transcoded {wanted}: {transcoded}"
            _check_decodes(data, policy)
            return PreparedImage(data, False, size, size, note)
        _check_decodes(data, policy)
        return PreparedImage(data, False, size, size)
    rgb = guarded(
        _CORRUPT_JPEG,
        simplejpeg.decode_jpeg,
        data,
        colorspace="RGB",
        min_height=target[0],
        min_width=target[1],
    )
    return guarded(_NOT_CONVERTED, _finish, rgb, target, orientation, policy, size)


def _check_decodes(data: bytes, policy: _Policy) -> None:
    """The `decode` check of a JPEG kept as it is: a decode at the smallest DCT scale."""
    if policy.check == "decode":
        guarded(
            _CORRUPT_JPEG,
            simplejpeg.decode_jpeg,
            data,
            colorspace="GRAY",
            min_height=1,
            min_width=1,
        )


def _transcode_memory(policy: _Policy) -> int:
    return max(DEFAULT_MAX_MEMORY, _TRANSCODE_BYTES_PER_SAMPLE * policy.pixel_budget)


def _transcode(data: bytes, policy: _Policy, progressive: bool) -> bytes | str:
    """The lossless baseline transcode of `data` (with the policy's restart markers), or why
    there is none (the pixels would differ); the transcoder's other errors (data it cannot
    read) raise. Only a progressive file's transcode is decoded against the input: a
    sequential file's holds exactly the coefficients the transcoder read, all of them (a
    warning is an error), and no decoder smooths a sequential file, so its pixels are the
    input's (SPEC section 6)."""
    memory = _transcode_memory(policy)
    if not progressive:
        return to_baseline(data, restart_width=policy.restart_width, max_memory=memory)
    try:
        return to_baseline_lossless(data, restart_width=policy.restart_width, max_memory=memory)
    except TranscodeNotLosslessError as e:
        return str(e)


def _convert_other(data: bytes, policy: _Policy) -> PreparedImage | Reject:
    header = guarded(_NOT_DECODABLE, input_header, data)
    if header is not None:
        _within_budget(header, policy)
    buffer = np.frombuffer(data, dtype=np.uint8)
    decoded, kinds, blobs = guarded(
        _NOT_DECODABLE, cv2.imdecodeWithMetadata, buffer, cv2.IMREAD_UNCHANGED
    )
    if decoded is None or decoded.size == 0:
        return Reject(f"{_NOT_DECODABLE} (starts with {data[:8]!r})")
    pixels = to_uint8(decoded)
    rgb = None if pixels is None else guarded(_NOT_DECODABLE, bgr_any_to_rgb, pixels)
    if rgb is None:
        return Reject(f"unsupported pixel layout {decoded.dtype} x {decoded.shape}")
    orientation = NO_ROTATION
    for kind, blob in zip(kinds, blobs, strict=True):
        if kind == cv2.IMAGE_METADATA_EXIF:
            exif = np.asarray(blob, dtype=np.uint8).tobytes()
            orientation = guarded(_NOT_DECODABLE, tiff_orientation, exif)
    target = fit_within(rgb.shape[0], rgb.shape[1], policy.max_side)
    full = (rgb.shape[0], rgb.shape[1])
    return guarded(_NOT_CONVERTED, _finish, rgb, target, orientation, policy, full)


def _finish(
    rgb: Pixels, target: tuple[int, int], orientation: int, policy: _Policy, full: tuple[int, int]
) -> PreparedImage:
    """Shrink (in stored orientation), turn upright, encode as a 4:2:0 RGB JPEG (with the
    policy's restart markers). `full`: the `(height, width)` before the shrink, in stored
    orientation."""
    upright = apply_orientation(resize_area(rgb, *target), orientation)
    encoded: bytes = simplejpeg.encode_jpeg(
        np.ascontiguousarray(upright),
        quality=policy.quality,
        colorspace="RGB",
        colorsubsampling="420",
    )
    if policy.restart_width:
        encoded = to_baseline(
            encoded, restart_width=policy.restart_width, max_memory=_transcode_memory(policy)
        )
    transposed = orientation in TRANSPOSING
    upright_full = (full[1], full[0]) if transposed else full
    return PreparedImage(bytes(encoded), True, (upright.shape[0], upright.shape[1]), upright_full)
