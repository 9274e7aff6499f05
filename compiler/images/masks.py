"""Segmentation masks from COCO instance segmentations: polygons and run-length encodings.

`render_mask` paints instances, in order, into one label map of the image's size (later
instances over earlier; 0 where none is); `mask_png` encodes it as a single-channel PNG, 8-bit
while every value fits, else 16-bit. Rasterization is pycocotools' (`pycocotools.mask`), so a
mask covers the pixels COCO's own tools count: a polygon is filled as `frPyObjects` fills it, and
RLE counts are decoded as they are. pycocotools is imported on first use (`fastpack[coco]`).

A segmentation is checked before pycocotools sees it, as pycocotools passes some malformed input
without a word (a polygon of an odd number of coordinates, RLE counts that do not cover the
image); `SegmentationError` says what is wrong.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from ..errors import BuildError

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
        from pycocotools import mask  # noqa: PLC0415 - optional dependency
    except ImportError as e:
        raise MissingPycocotoolsError(
            "rendering COCO masks needs pycocotools: pip install 'fastpack[coco]'"
        ) from e
    return mask


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_polygons(polygons: list[Any]) -> None:
    for k, polygon in enumerate(polygons):
        if not isinstance(polygon, list) or not all(_is_number(v) for v in polygon):
            raise SegmentationError(f"polygon {k} is not a list of numbers")
        if len(polygon) < _MIN_POLYGON or len(polygon) % 2:
            raise SegmentationError(
                f"polygon {k} has {len(polygon)} coordinates, expected an even number >= 6"
            )
        if not np.isfinite(polygon).all():
            raise SegmentationError(f"polygon {k} has a coordinate that is not finite")


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
        _check_polygons(segmentation)
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
    height: int, width: int, instances: Iterable[tuple[int, Any]]
) -> npt.NDArray[np.uint8] | npt.NDArray[np.uint16]:
    """A (height, width) label map: each `(value, segmentation)` of `instances`, in order, sets
    its pixels to `value` (1 .. 65535); pixels no instance covers are 0. SegmentationError,
    naming the instance (its position in `instances`), for a segmentation that cannot be
    rendered."""
    masks = _mask_module()
    # pycocotools decodes column-major (H, W) arrays: painting their transposes, which are
    # row-major, into a transposed map is about four times faster than painting them as they are
    painted: npt.NDArray[np.uint8] | npt.NDArray[np.uint16] = np.zeros((width, height), np.uint8)
    for k, (value, segmentation) in enumerate(instances):
        try:
            mask = _instance(masks, segmentation, height, width)
        except SegmentationError as e:
            raise SegmentationError(f"instance {k}: {e}", instance=k) from e
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
