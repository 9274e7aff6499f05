"""JPEG decoding with DCT-domain downscaling, the geometry of an exact crop and its resize with
OpenCV (and PNG decoding, as stored). `crop_decode.render` puts them together.

libjpeg-turbo can decode at n/8 of full size, but only 1/2, 1/4 and 1/8 have SIMD code paths;
the other scales run slower than a full decode. `dct_shift` therefore picks the smallest of those
scales at which the crop box, enlarged by at most `max_upscale`, still covers the output; the
final bilinear resize then changes the size by at most 2x either way (box-averaged halvings
first, when a small output asks for more shrinking than the DCT scales give). Entropy
decoding is paid in full at every scale, so a reduced scale saves the inverse DCT and colour
conversion only; benchmarks/readers/COSTS.md has the costs of each step.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import simplejpeg
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET, ImageHeader, ImageHeaderError

from .guard import budgeted_jpeg, budgeted_png, guarded

JpegData = bytes | bytearray | memoryview
Image = npt.NDArray[np.uint8]
Pixels = npt.NDArray[np.integer[Any] | np.floating[Any]]  # a PNG's, 8 or 16 bits

MAX_SHIFT = 3  # decode scales 1, 1/2, 1/4, 1/8
_COLOR_NDIM = 3  # height, width, channels
_BGR = 3  # channels


@dataclass(frozen=True, slots=True)
class Box:
    """A crop box in the pixel coordinates of the full-size image; fractional values allowed."""

    top: float
    left: float
    height: float
    width: float


@dataclass(frozen=True, kw_only=True, slots=True)
class DecodeOptions:
    """libjpeg-turbo speed/quality switches (each worth a few percent, see simplejpeg), and the
    pixel budget: the most samples (width x height x components, as the header declares them)
    an image may have to be decoded at all (`fastpack.formats.image_header`)."""

    fastdct: bool = False
    fastupsample: bool = False
    pixel_budget: int = DEFAULT_PIXEL_BUDGET


DEFAULT_OPTIONS = DecodeOptions()


def decode_png(data: JpegData, pixel_budget: int = DEFAULT_PIXEL_BUDGET) -> npt.NDArray[np.generic]:
    """A PNG as stored: HxW (grey) or HxWxC (RGB, RGBA), 8 or 16 bits per channel; its header
    checked against `pixel_budget` first."""
    image = decode_png_bgr(data, pixel_budget)
    if image.ndim == _COLOR_NDIM and image.shape[2] in (3, 4):  # OpenCV's BGR(A) order
        code = cv2.COLOR_BGR2RGB if image.shape[2] == _BGR else cv2.COLOR_BGRA2RGBA
        image = cv2.cvtColor(image, code)
    decoded: npt.NDArray[np.generic] = image
    return decoded


def decode_png_bgr(data: JpegData, pixel_budget: int = DEFAULT_PIXEL_BUDGET) -> Pixels:
    """`decode_png` as OpenCV gives it, colour images in BGR(A) order."""
    budgeted_png(data, pixel_budget)
    image = guarded(cv2.imdecode, np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ImageHeaderError("not a PNG that OpenCV decodes")
    decoded: Pixels = image
    return decoded


def jpeg_size(data: JpegData, pixel_budget: int = DEFAULT_PIXEL_BUDGET) -> tuple[int, int]:
    """`(height, width)` of a JPEG, read from its frame header, which is checked against
    `pixel_budget` (PixelBudgetError)."""
    header: ImageHeader = budgeted_jpeg(data, pixel_budget)
    return header.height, header.width


def decode(
    data: JpegData, options: DecodeOptions = DecodeOptions(), out: Image | None = None
) -> Image:
    """Full-size RGB decode, into `out` when given (it must have the image's shape); the
    header is checked against `options.pixel_budget` first."""
    budgeted_jpeg(data, options.pixel_budget)
    return decode_checked(data, options, out)


def decode_checked(data: JpegData, options: DecodeOptions, out: Image | None = None) -> Image:
    """`decode` of a JPEG whose header the caller has checked against `options.pixel_budget`
    already (`jpeg_size`), so that it is read once."""
    image: Image = guarded(
        simplejpeg.decode_jpeg,
        data,
        colorspace="RGB",
        fastdct=options.fastdct,
        fastupsample=options.fastupsample,
        buffer=out,
    )
    return image if out is None else out


def dct_shift(
    box_height: float,
    box_width: float,
    out_height: int,
    out_width: int,
    max_upscale: float = 1.0,
) -> int:
    """Largest `k <= 3` such that the box, scaled by `1 / 2**k` and then enlarged by
    `max_upscale`, still covers the output."""
    k = 0
    while (
        k < MAX_SHIFT
        and box_height * max_upscale / 2 ** (k + 1) >= out_height
        and box_width * max_upscale / 2 ** (k + 1) >= out_width
    ):
        k += 1
    return k


class _Scratch(threading.local):
    """A reusable output buffer per thread for reduced-scale decodes: no allocation, page
    faults or heap growth per image (a decode's pixels are cropped and resized, then dropped)."""

    def __init__(self) -> None:
        self.buffer = np.empty(0, np.uint8)

    def get(self, nbytes: int) -> Image:
        if self.buffer.size < nbytes:
            self.buffer = np.empty(nbytes, np.uint8)
        return self.buffer


_scratch = _Scratch()


def scratch(nbytes: int) -> Image:
    """This thread's reusable buffer of at least `nbytes` (valid until its next use)."""
    return _scratch.get(nbytes)


def decode_scaled(
    data: JpegData, height: int, width: int, shift: int, options: DecodeOptions
) -> Image:
    """Decode at `1 / 2**shift` of full size (libjpeg rounds the scaled size up), into this
    thread's scratch buffer: the result is valid until the thread's next call. The header is
    checked against `options.pixel_budget` first: the decode's output is the scaled image, but a
    progressive one keeps the coefficients of the whole image until its last scan."""
    budgeted_jpeg(data, options.pixel_budget)
    scaled_h, scaled_w = -(-height >> shift), -(-width >> shift)
    image: Image = guarded(
        simplejpeg.decode_jpeg,
        data,
        colorspace="RGB",
        fastdct=options.fastdct,
        fastupsample=options.fastupsample,
        min_height=scaled_h if shift else 0,
        min_width=scaled_w if shift else 0,
        buffer=scratch(scaled_h * scaled_w * 3),
    )
    return image


def snap_to_scale(box: Box, shift: int, height: int, width: int) -> Box:
    """`box` with its edges moved to the nearest multiples of `2**shift` inside a `height` x
    `width` image: the pixel grid of the `1 / 2**shift` decode, so that the box is sampled
    exactly there. An edge moves by at most `2**(shift - 1)` pixels, except that a box under one
    step grows to one and the image's partial last decoded row or column is left out; the box
    stays non-empty (an image smaller than `2**shift` keeps its one decoded pixel)."""
    if shift == 0:
        return box
    step = 1 << shift
    bottom_limit, right_limit = max(height >> shift, 1) * step, max(width >> shift, 1) * step
    top = min(round(box.top / step), bottom_limit // step - 1) * step
    left = min(round(box.left / step), right_limit // step - 1) * step
    bottom = min(max(round((box.top + box.height) / step) * step, top + step), bottom_limit)
    right = min(max(round((box.left + box.width) / step) * step, left + step), right_limit)
    return Box(top, left, bottom - top, right - left)


def crop_resize(image: Image, box: Box, out: Image, *, flip: bool = False) -> None:
    """Resample `box` of `image` into `out`.

    The box is rounded to whole pixels of `image` (at most half a pixel of the decoded scale)
    and resized bilinearly; cv2.resize on a slice (separable, on OpenCV's fast paths) costs
    less than an affine warp of the exact box. A dimension that shrinks by more than 2x is
    first box-averaged by exact halvings, which filters like INTER_AREA at a fraction of its
    cost.
    """
    top, left, bottom, right = pixel_window(box)
    resize_region(image[top:bottom, left:right], out, flip=flip)


def resize_region(region: Image, out: Image, *, flip: bool = False) -> None:
    """Resize all of `region` into `out` (`crop_resize` after the cut), optionally mirrored."""
    out_h, out_w = out.shape[:2]
    region = _halve_to_within_2x(region, out_h, out_w)
    cv2.resize(region, (out_w, out_h), dst=out, interpolation=cv2.INTER_LINEAR)
    if flip:
        cv2.flip(out, 1, dst=out)


def pixel_window(box: Box) -> tuple[int, int, int, int]:
    """`(top, left, bottom, right)`: the whole pixels of `box` that `crop_resize` samples, at
    least one each way."""
    top, left = round(box.top), round(box.left)
    bottom = max(round(box.top + box.height), top + 1)
    right = max(round(box.left + box.width), left + 1)
    return top, left, bottom, right


def scaled_window(box: Box, shift: int) -> tuple[int, int, int, int]:
    """`(top, left, bottom, right)`: the whole pixels of `box` (full-size coordinates) in the
    `1 / 2**shift` decode, where libjpeg's scaled pixel `k` covers full-size pixels
    `[k, k + 1) * 2**shift` (`pixel_window` of the scaled box)."""
    f = 1 / (1 << shift)
    return pixel_window(Box(box.top * f, box.left * f, box.height * f, box.width * f))


def _halved_extent(pixels: int, out: int) -> int:
    """Of `pixels` rows (or columns), how many `_halve_to_within_2x` keeps for `out`."""
    step = 1
    while pixels > 2 * out:
        pixels //= 2
        step *= 2
    return pixels * step


def sampled_region(box: Box, shift: int, out_height: int, out_width: int) -> Box:
    """The region of the full-size image that `render` resamples onto the whole output: `box`
    on the pixel grid of the `1 / 2**shift` decode as `crop_resize` rounds it, less the rows and
    columns its halvings leave out, in full-size pixel-edge coordinates. Output pixel edges
    `0 .. out` map linearly onto it (before the flip)."""
    top, left, bottom, right = scaled_window(box, shift)
    height = _halved_extent(bottom - top, out_height)
    width = _halved_extent(right - left, out_width)
    s = 1 << shift
    return Box(top * s, left * s, height * s, width * s)


def _halve_to_within_2x(region: Image, out_h: int, out_w: int) -> Image:
    """Average 2x1, 1x2 or 2x2 pixel blocks until neither dimension exceeds twice the output
    (an odd last row or column is dropped before each halving). Bilinear resampling to exactly
    half samples midway between each pair: the pair's average, on OpenCV's fast path."""
    while True:
        h, w = region.shape[:2]
        fy, fx = (2 if h > 2 * out_h else 1), (2 if w > 2 * out_w else 1)
        if fy == fx == 1:
            return region
        even = region[: h - h % fy, : w - w % fx]
        region = np.asarray(
            cv2.resize(even, (w // fx, h // fy), interpolation=cv2.INTER_LINEAR), np.uint8
        )
