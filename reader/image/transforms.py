"""Crop-and-resize transforms that read the JPEG header first and decode only what they need.

A transform maps JPEG bytes to a uint8 RGB image of a fixed shape, written into a caller's
buffer when one is given. A random transform takes its randomness as `draws` uniform numbers in
[0, 1), which the Dataset derives from (seed, epoch, sample index) (`sample_draws`), so results
do not depend on worker count, batching or order. Each transform also says, through `crop`,
which region of the image its output shows and whether it is mirrored, so that masks and boxes
can follow the image (`geometry`).

Each transform reads the JPEG's frame header first and refuses an image over its `pixel_budget`
(samples: width x height x components, default `DEFAULT_PIXEL_BUDGET`) with a PixelBudgetError,
before anything is decoded; a decoder's failure is an ImageDecodeError (`guard`). Both are
FieldValueErrors, which a Dataset reraises naming the sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET, check_budget_value

from .crop_decode import render
from .decode import (
    Box,
    DecodeOptions,
    Image,
    JpegData,
    dct_shift,
    jpeg_size,
    sampled_region,
    scaled_window,
    snap_to_scale,
)
from .geometry import Crop

Size = int | tuple[int, int]

_TRIES = 10  # attempts at a random box before the centre-crop fallback (as torchvision)
_DRAWS = 2 * _TRIES + 3  # (scale, log-ratio) per try, top, left, flip


class Transform(Protocol):
    """What `Dataset` needs of a transform."""

    @property
    def output_shape(self) -> tuple[int, int]:
        """`(height, width)` of every output image."""
        ...

    @property
    def draws(self) -> int:
        """How many uniform numbers in [0, 1) one call consumes (0: not random)."""
        ...

    def __call__(
        self, data: JpegData, draws: Sequence[float] | None = None, out: Image | None = None
    ) -> Image:
        """Transform one JPEG with `draws` (at least `self.draws` numbers; None when 0);
        write into `out` (shape `(*output_shape, 3)`) when given."""
        ...


class GeometryTransform(Transform, Protocol):
    """A transform that says where its output comes from, so that masks and boxes can follow
    the image (`geometry.crop_mask`, `geometry.crop_boxes`)."""

    def crop(self, height: int, width: int, draws: Sequence[float] | None = None) -> Crop:
        """The `Crop` that `__call__` applies to a `height` x `width` image with `draws`."""
        ...


class WindowPlan(NamedTuple):
    """What a crop of one image decodes: the image's full size `(height, width)`, the DCT scale
    `1 / 2**shift`, the window of whole pixels at that scale `(top, left, bottom, right)`, and
    whether the output is mirrored."""

    size: tuple[int, int]
    shift: int
    window: tuple[int, int, int, int]
    flip: bool


@runtime_checkable
class PlannedTransform(Transform, Protocol):
    """A transform in two steps: `plan` reads the header and draws the crop (what it will
    decode, without decoding), `render` decodes it; `render(data, plan(data, draws), out)` is
    `__call__(data, draws, out)`."""

    def plan(self, data: JpegData, draws: Sequence[float] | None = None) -> WindowPlan:
        """The crop of the JPEG `data` with `draws`, its header checked (pixel budget)."""
        ...

    def render(self, data: JpegData, plan: WindowPlan, out: Image) -> None:
        """Decode what `plan` says of `data` into `out` (shape `(*output_shape, 3)`)."""
        ...


def _render(data: JpegData, plan: WindowPlan, out: Image, options: DecodeOptions) -> None:
    """`plan`'s window of `data` decoded, resized into `out` and mirrored if it says so."""
    render(data, plan.size, plan.shift, plan.window, out, flip=plan.flip, options=options)


def _pair(size: Size) -> tuple[int, int]:
    height, width = (size, size) if isinstance(size, int) else size
    if height <= 0 or width <= 0:
        raise ValueError(f"size must be positive, got {size!r}")
    return int(height), int(width)


def _range(name: str, value: tuple[float, float]) -> tuple[float, float]:
    low, high = float(value[0]), float(value[1])
    if not 0 < low <= high:
        raise ValueError(f"{name} must be (low, high) with 0 < low <= high, got {value!r}")
    return low, high


def _max_upscale(value: float) -> float:
    if not value >= 1:
        raise ValueError(f"max_upscale must be >= 1, got {value!r}")
    return float(value)


def _options(fastdct: bool, fastupsample: bool, pixel_budget: int) -> DecodeOptions:
    budget = check_budget_value(pixel_budget, "pixel_budget")
    return DecodeOptions(fastdct=fastdct, fastupsample=fastupsample, pixel_budget=budget)


def _output(shape: tuple[int, int], out: Image | None) -> Image:
    if out is None:
        return np.empty((*shape, 3), np.uint8)
    if out.shape != (*shape, 3) or out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous uint8 array of shape {(*shape, 3)}, "
            f"got {out.dtype} {out.shape}"
        )
    return out


def random_resized_box(
    height: int,
    width: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    draws: Sequence[float],
) -> Box:
    """torchvision's RandomResizedCrop box, driven by uniform `draws` in [0, 1): ten tries of
    (area scale, log aspect ratio), then a centre crop of the ratio clamped into `ratio`."""
    area = height * width
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for t in range(_TRIES):
        target = area * (scale[0] + (scale[1] - scale[0]) * draws[2 * t])
        aspect = math.exp(log_lo + (log_hi - log_lo) * draws[2 * t + 1])
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(draws[2 * _TRIES] * (height - h + 1))
            left = int(draws[2 * _TRIES + 1] * (width - w + 1))
            return Box(top, left, h, w)
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, round(width / ratio[0])
    elif in_ratio > ratio[1]:
        w, h = round(height * ratio[1]), height
    else:
        w, h = width, height
    return Box((height - h) // 2, (width - w) // 2, h, w)


class RandomResizedCrop:
    """A random box of `scale` of the area and aspect ratio in `ratio`, resized to `size`, then
    mirrored with probability `flip_prob`.

    The JPEG is decoded at the cheapest DCT scale (1, 1/2, 1/4, 1/8) from which the box needs
    at most `max_upscale` enlargement, and the box's edges are moved to that scale's pixel grid
    (by at most half a decoded pixel), so it is sampled exactly; only the box's window is
    decoded where the window decoder is built (`crop_decode`). `max_upscale=1` (default) never
    enlarges a decoded image: full quality, at about the cost that `max_upscale=2` had before
    crops decoded their window alone. `max_upscale=2` is the faster setting: it decodes at 1/2
    any box of at least the output size (3 crops in 4 of 480-pixel photos cropped to 224), at
    lower quality on sharp photos (benchmarks/readers/QUALITY.md,
    benchmarks/readers/CROP_DECODE.md).
    """

    draws = _DRAWS

    def __init__(  # noqa: PLR0913 -- mirrors: torchvision
        self,
        size: Size,
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3 / 4, 4 / 3),
        flip_prob: float = 0.5,
        *,
        max_upscale: float = 1.0,
        fastdct: bool = False,
        fastupsample: bool = False,
        pixel_budget: int = DEFAULT_PIXEL_BUDGET,
    ) -> None:
        self.output_shape = _pair(size)
        self.max_upscale = _max_upscale(max_upscale)
        self.scale = _range("scale", scale)
        self.ratio = _range("ratio", ratio)
        if not 0 <= flip_prob <= 1:
            raise ValueError(f"flip_prob must be in [0, 1], got {flip_prob}")
        self.flip_prob = float(flip_prob)
        self.options = _options(fastdct, fastupsample, pixel_budget)

    def __repr__(self) -> str:
        return (
            f"RandomResizedCrop(size={self.output_shape}, scale={self.scale}, "
            f"ratio={self.ratio}, flip_prob={self.flip_prob}, max_upscale={self.max_upscale}, "
            f"{self.options})"
        )

    def __call__(
        self, data: JpegData, draws: Sequence[float] | None = None, out: Image | None = None
    ) -> Image:
        plan = self.plan(data, draws)
        out = _output(self.output_shape, out)
        _render(data, plan, out, self.options)
        return out

    def plan(self, data: JpegData, draws: Sequence[float] | None = None) -> WindowPlan:
        """The crop of the JPEG `data` with `draws`: its header read and checked against the
        pixel budget, the box drawn, its DCT scale and window (`PlannedTransform`)."""
        if draws is None or len(draws) < _DRAWS:
            raise ValueError(f"RandomResizedCrop needs {_DRAWS} draws (see sample_draws)")
        size = jpeg_size(data, self.options.pixel_budget)
        box, flip, shift = self._plan(size[0], size[1], draws)
        return WindowPlan(size, shift, scaled_window(box, shift), flip)

    def render(self, data: JpegData, plan: WindowPlan, out: Image) -> None:
        """Decode the crop `plan` of `data` into `out` (`PlannedTransform`)."""
        _render(data, plan, _output(self.output_shape, out), self.options)

    def crop(self, height: int, width: int, draws: Sequence[float] | None = None) -> Crop:
        """Where the output of a `height` x `width` image comes from with `draws` (the region
        that is resampled, on the grid of its DCT scale, and the flip)."""
        if draws is None or len(draws) < _DRAWS:
            raise ValueError(f"RandomResizedCrop needs {_DRAWS} draws (see sample_draws)")
        box, flip, shift = self._plan(height, width, draws)
        return Crop(sampled_region(box, shift, *self.output_shape), self.output_shape, flip)

    def params(self, height: int, width: int, draws: Sequence[float]) -> tuple[Box, bool]:
        """The crop box (on the grid of the DCT scale it is decoded at) and the flip decision
        for an image of `height` x `width`."""
        box, flip, _ = self._plan(height, width, draws)
        return box, flip

    def _plan(self, height: int, width: int, draws: Sequence[float]) -> tuple[Box, bool, int]:
        box = random_resized_box(height, width, self.scale, self.ratio, draws)
        shift = dct_shift(box.height, box.width, *self.output_shape, self.max_upscale)
        return snap_to_scale(box, shift, height, width), draws[_DRAWS - 1] < self.flip_prob, shift


class CenterCrop:
    """Resize the shorter side to `resize` (default `round(size / 0.875)`), then take the
    central `size`; decoded at the cheapest DCT scale from which the crop needs at most
    `max_upscale` enlargement (default 1: evaluation keeps every detail)."""

    draws = 0

    def __init__(  # noqa: PLR0913 -- mirrors: torchvision
        self,
        size: Size,
        resize: int | None = None,
        *,
        max_upscale: float = 1.0,
        fastdct: bool = False,
        fastupsample: bool = False,
        pixel_budget: int = DEFAULT_PIXEL_BUDGET,
    ) -> None:
        self.output_shape = _pair(size)
        self.max_upscale = _max_upscale(max_upscale)
        longest = max(self.output_shape)
        self.resize = round(longest / 0.875) if resize is None else int(resize)
        if self.resize < longest:
            raise ValueError(f"resize ({self.resize}) must be >= the crop size {size!r}")
        self.options = _options(fastdct, fastupsample, pixel_budget)

    def __repr__(self) -> str:
        return (
            f"CenterCrop(size={self.output_shape}, resize={self.resize}, "
            f"max_upscale={self.max_upscale}, {self.options})"
        )

    def box(self, height: int, width: int) -> Box:
        """The crop in full-size coordinates: torchvision's Resize(resize) + CenterCrop(size)."""
        if height <= width:
            resized = (self.resize, int(self.resize * width / height))
        else:
            resized = (int(self.resize * height / width), self.resize)
        fy, fx = resized[0] / height, resized[1] / width
        out_h, out_w = self.output_shape
        top = round((resized[0] - out_h) / 2)
        left = round((resized[1] - out_w) / 2)
        return Box(top / fy, left / fx, out_h / fy, out_w / fx)

    def crop(self, height: int, width: int, draws: Sequence[float] | None = None) -> Crop:
        """Where the output of a `height` x `width` image comes from (the region that is
        resampled, on the grid of its DCT scale; never flipped)."""
        box = self.box(height, width)
        shift = dct_shift(box.height, box.width, *self.output_shape, self.max_upscale)
        return Crop(sampled_region(box, shift, *self.output_shape), self.output_shape, False)

    def __call__(
        self, data: JpegData, draws: Sequence[float] | None = None, out: Image | None = None
    ) -> Image:
        plan = self.plan(data, draws)
        out = _output(self.output_shape, out)
        _render(data, plan, out, self.options)
        return out

    def plan(self, data: JpegData, draws: Sequence[float] | None = None) -> WindowPlan:
        """The crop of the JPEG `data`: its header read and checked against the pixel budget,
        the box, its DCT scale and window (`PlannedTransform`)."""
        size = jpeg_size(data, self.options.pixel_budget)
        box = self.box(*size)
        shift = dct_shift(box.height, box.width, *self.output_shape, self.max_upscale)
        return WindowPlan(size, shift, scaled_window(box, shift), False)

    def render(self, data: JpegData, plan: WindowPlan, out: Image) -> None:
        """Decode the crop `plan` of `data` into `out` (`PlannedTransform`)."""
        _render(data, plan, _output(self.output_shape, out), self.options)
