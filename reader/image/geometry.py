"""Geometry that follows an image through a transform: masks and boxes.

A transform maps the full-size image to its output through one `Crop`: a region of the image,
resampled onto the whole output, then mirrored left-right or not. `crop_mask` and `crop_boxes`
apply the same `Crop` to a mask of the image's size and to boxes in its pixel coordinates, so
that they stay aligned with the transformed image. A transform that can say its `Crop` for a
given image size and draws is a `transforms.GeometryTransform` (`RandomResizedCrop`,
`CenterCrop`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .decode import Box

AnyArray = npt.NDArray[Any]
_BOXES_NDIM, _BOX_COORDS = 2, 4  # boxes are an (n, 4) array


@dataclass(frozen=True, slots=True)
class Crop:
    """`region` of the full-size image (pixel-edge coordinates: pixel `(y, x)` covers
    `[y, y + 1) x [x, x + 1)`) resampled onto the whole `output_shape` output, then mirrored
    left-right when `flip`."""

    region: Box
    output_shape: tuple[int, int]
    flip: bool


def _source_pixels(start: float, extent: float, pixels: int, size: int) -> npt.NDArray[np.intp]:
    """For each of `pixels` output pixels, the source pixel under its centre (nearest
    neighbour) when `[start, start + extent)` maps onto the output; clipped to the source's
    `size` pixels."""
    centres = start + (np.arange(pixels) + 0.5) * (extent / pixels)
    sources: npt.NDArray[np.intp] = np.clip(np.floor(centres).astype(np.intp), 0, size - 1)
    return sources


def crop_mask(mask: AnyArray, crop: Crop, out: AnyArray | None = None) -> AnyArray:
    """`mask` (HxW or HxWxC, any dtype, the image's size) through `crop`: each output pixel
    takes the mask pixel under its centre (nearest neighbour: labels are never blended).
    Written into `out` when given (it must have the output's shape and the mask's dtype)."""
    if mask.ndim not in (2, 3):
        raise ValueError(f"a mask is HxW or HxWxC, got shape {mask.shape}")
    out_h, out_w = crop.output_shape
    r = crop.region
    rows = _source_pixels(r.top, r.height, out_h, mask.shape[0])
    cols = _source_pixels(r.left, r.width, out_w, mask.shape[1])
    if crop.flip:
        cols = cols[::-1]
    result: AnyArray = mask[rows][:, cols]
    if out is None:
        return result
    if out.shape != result.shape or out.dtype != result.dtype:
        raise ValueError(
            f"a mask of {mask.dtype} {mask.shape} becomes {result.dtype} {result.shape}, "
            f"which does not fit the batch's {out.dtype} {out.shape} (batched masks are 8-bit, "
            "one channel)"
        )
    out[...] = result
    return out


def crop_boxes(boxes: AnyArray, crop: Crop, *, drop_empty: bool = True) -> AnyArray:
    """`boxes` (N x 4: x0, y0, x1, y1 in the full-size image's pixel-edge coordinates) in the
    output's coordinates: moved and scaled as the image is, mirrored with it, clipped to the
    output. Boxes left with no area are dropped (`drop_empty`, so that every box is visible) or
    kept with zero width or height (so that they stay paired with per-box values stored
    elsewhere). Floating-point boxes keep their dtype; others come back as float32."""
    if boxes.ndim != _BOXES_NDIM or boxes.shape[1] != _BOX_COORDS:
        raise ValueError(f"boxes are N x 4 (x0, y0, x1, y1), got shape {boxes.shape}")
    dtype = boxes.dtype if boxes.dtype.kind == "f" else np.dtype(np.float32)
    out_h, out_w = crop.output_shape
    r = crop.region
    scale = np.array([out_w / r.width, out_h / r.height] * 2)
    origin = np.array([r.left, r.top] * 2)
    moved = (boxes.astype(np.float64) - origin) * scale
    np.clip(moved, 0, [out_w, out_h, out_w, out_h], out=moved)
    if crop.flip:
        moved[:, [0, 2]] = out_w - moved[:, [2, 0]]
    if drop_empty:
        moved = moved[(moved[:, 2] > moved[:, 0]) & (moved[:, 3] > moved[:, 1])]
    result: AnyArray = moved.astype(dtype)
    return result
