"""Segmentation masks from COCO instance segmentations: polygons and run-length encodings.

`render_mask` paints instances, in order, into one label map of the image's size (later
instances over earlier; 0 where none is); `mask_png` encodes it as a single-channel PNG, 8-bit
while every value fits, else 16-bit. Rasterization is pycocotools' (`pycocotools.mask`), so a
mask covers the pixels COCO's own tools count: a polygon is filled as `frPyObjects` fills it, and
RLE counts are decoded as they are. pycocotools is imported on first use (`fastpack[coco]`).

A segmentation is checked before pycocotools sees it, as pycocotools passes some malformed input
without a word (a polygon of an odd number of coordinates, RLE counts that do not cover the
image); `SegmentationError` says what is wrong. The size comes from an annotation file, not from
image bytes: a map over the pixel budget (`fastpack.formats.DEFAULT_PIXEL_BUDGET` samples) is
refused before anything is allocated, and whatever pycocotools raises on a segmentation is a
SegmentationError in its words (`guard.describe`), never an error that stops the build.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Iterable
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET

from ..errors import BuildError
from .guard import MACHINE_ERRORS, describe

_MIN_POLYGON = 6  # three points
_U8_MAX = 255


class SegmentationError(BuildError, ValueError):
    """A segmentation that cannot be rendered (malformed, or not of the image's size);
    `instance` is its position in what `render_mask` was given, when it is one of those."""

    def __init__(self, message: str, instance: int | None = None) -> None:
        super().__init__(message)
        self.instance = instance


class MissingPycocotoolsError(BuildError, ImportError):
    """Rendering masks needs pycocotools, which is not installed."""


def _mask_module() -> Any:
    try:
        from pycocotools import mask  # noqa: PLC0415 -- optional: pycocotools
    except ImportError as e:
        raise MissingPycocotoolsError(
            "rendering COCO masks needs pycocotools: pip install 'fastpack[coco]'"
        ) from e
    return mask


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_polygons(polygons: list[Any], height: int, width: int) -> None:
    """Each polygon: an even number (>= 6) of finite coordinates, none more than the image's
    size outside it (pycocotools rasterizes at 5x in 32-bit ints: a coordinate of 1e308 crashes
    the process, and far-away ones cost memory by the pixel of their edges)."""
    for k, polygon in enumerate(polygons):
        if not isinstance(polygon, list) or not all(_is_number(v) for v in polygon):
            raise SegmentationError(f"polygon {k} is not a list of numbers")
        if len(polygon) < _MIN_POLYGON or len(polygon) % 2:
            raise SegmentationError(
                f"polygon {k} has {len(polygon)} coordinates, expected an even number >= 6"
            )
        if not np.isfinite(polygon).all():
            raise SegmentationError(f"polygon {k} has a coordinate that is not finite")
        xs, ys = np.asarray(polygon[0::2], np.float64), np.asarray(polygon[1::2], np.float64)
        far = (np.abs(xs - width / 2) > 1.5 * width) | (np.abs(ys - height / 2) > 1.5 * height)
        if far.any():
            at = int(np.argmax(far))
            raise SegmentationError(
                f"polygon {k} has the point ({xs[at]:g}, {ys[at]:g}), more than the image's "
                f"size ({width} x {height}) outside it"
            )


def _check_rle(rle: dict[str, Any], height: int, width: int) -> None:
    size, counts = rle.get("size"), rle.get("counts")
    if size != [height, width]:
        raise SegmentationError(f"RLE of size {size!r}, expected the image's [{height}, {width}]")
    if isinstance(counts, list):
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            raise SegmentationError("uncompressed RLE counts are not all integers >= 0")
        if sum(counts) != height * width:
            raise SegmentationError(
                f"uncompressed RLE counts add up to {sum(counts)}, expected {height * width} "
                f"({height} x {width})"
            )
    elif not isinstance(counts, str):
        raise SegmentationError(f"RLE counts are a list or a string, found {type(counts).__name__}")


def _instance(masks: Any, segmentation: Any, height: int, width: int) -> npt.NDArray[np.uint8]:
    """One instance's binary mask, (height, width)."""
    if isinstance(segmentation, list):
        _check_polygons(segmentation, height, width)
        if not segmentation:
            return np.zeros((height, width), np.uint8)
        rle = masks.merge(masks.frPyObjects(segmentation, height, width))
    elif isinstance(segmentation, dict):
        _check_rle(segmentation, height, width)
        rle = segmentation
    else:
        raise SegmentationError(
            f"a segmentation is a list of polygons or an RLE object, found "
            f"{type(segmentation).__name__}"
        )
    try:
        if isinstance(rle["counts"], list):  # uncompressed
            rle = masks.frPyObjects(rle, height, width)
        elif isinstance(rle["counts"], str):
            rle = {"size": [height, width], "counts": rle["counts"].encode("ascii")}
        with warnings.catch_warnings():  # pycocotools' own numpy-2 deprecation, every call
            warnings.filterwarnings("ignore", "__array__ implementation", DeprecationWarning)
            decoded = masks.decode(rle)
    except (ValueError, UnicodeEncodeError) as e:
        raise SegmentationError(f"RLE that does not decode ({e})") from e
    return np.asarray(decoded, dtype=np.uint8)


def render_mask(
    height: int,
    width: int,
    instances: Iterable[tuple[int, Any]],
    *,
    pixel_budget: int = DEFAULT_PIXEL_BUDGET,
) -> npt.NDArray[np.uint8] | npt.NDArray[np.uint16]:
    """A (height, width) label map: each `(value, segmentation)` of `instances`, in order, sets
    its pixels to `value` (1 .. 65535); pixels no instance covers are 0. SegmentationError,
    naming the instance (its position in `instances`), for a segmentation that cannot be
    rendered, and for a size over `pixel_budget` (samples of the one-channel map)."""
    try:
        size = operator.index(height), operator.index(width)
    except TypeError:
        size = (0, 0)
    if min(size) < 1:
        raise SegmentationError(f"a mask of {width!r} x {height!r} pixels: sizes are ints >= 1")
    height, width = size
    if height * width > pixel_budget:
        raise SegmentationError(
            f"a mask of {width} x {height} pixels = {height * width:,} samples, over the pixel "
            f"budget of {pixel_budget:,}"
        )
    masks = _mask_module()
    # pycocotools decodes column-major (H, W) arrays: painting their transposes, which are
    # row-major, into a transposed map walks memory in order, faster than painting them as they are
    painted: npt.NDArray[np.uint8] | npt.NDArray[np.uint16] = np.zeros((width, height), np.uint8)
    for k, (value, segmentation) in enumerate(instances):
        try:
            mask = _instance(masks, segmentation, height, width)
        except SegmentationError as e:
            raise SegmentationError(f"instance {k}: {e}", instance=k) from e
        except MACHINE_ERRORS:
            raise
        except Exception as e:  # pycocotools on input it does not expect: the input's fault
            raise SegmentationError(f"instance {k}: {describe(e)}", instance=k) from e
        if value > _U8_MAX and painted.dtype == np.uint8:
            painted = painted.astype(np.uint16)
        np.copyto(painted, value, where=mask.T.view(bool))
    return np.ascontiguousarray(painted.T)


def mask_png(label: npt.NDArray[np.uint8] | npt.NDArray[np.uint16]) -> bytes:
    """The label map as a single-channel PNG (its dtype's bit depth)."""
    ok, data = cv2.imencode(".png", label)
    if not ok:
        raise SegmentationError(
            f"OpenCV could not encode a {label.shape} {label.dtype} mask as PNG"
        )
    return bytes(data)
