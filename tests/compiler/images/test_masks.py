"""COCO segmentations rendered into one label map: polygons, RLE (uncompressed and compressed),
later instances over earlier, and the segmentations pycocotools would take without a word."""

from __future__ import annotations

import sys
from typing import Any

import cv2
import numpy as np
import pytest
from fastpack.compiler.images.masks import (
    MissingPycocotoolsError,
    SegmentationError,
    mask_png,
    render_mask,
)
from pycocotools import mask as coco_mask

from tests.compiler.sources._scans import png_pixels

H, W = 40, 50
RECTANGLE = [[10.0, 10.0, 30.0, 10.0, 30.0, 20.0, 10.0, 20.0]]  # 20 x 10 pixels


def drawn(points: list[tuple[int, int]]) -> np.ndarray:
    """A filled polygon drawn by OpenCV, the reference the rendered masks are held against."""
    image = np.zeros((H, W), np.uint8)
    cv2.fillPoly(image, [np.array(points, np.int32)], 1)
    return image


def compressed(binary: np.ndarray) -> dict[str, Any]:
    rle = coco_mask.encode(np.asfortranarray(binary.astype(np.uint8)))
    return {"size": [H, W], "counts": rle["counts"].decode("ascii")}


def uncompressed(binary: np.ndarray) -> dict[str, Any]:
    flat = binary.flatten(order="F")  # COCO counts run down the columns
    counts, value, run = [], 0, 0
    for pixel in flat:
        if pixel != value:
            counts.append(run)
            value, run = pixel, 0
        run += 1
    counts.append(run)
    return {"size": [H, W], "counts": [int(c) for c in counts]}


def test_a_polygon_covers_the_pixels_of_the_drawn_one() -> None:
    label = render_mask(H, W, [(3, RECTANGLE)])
    assert label.dtype == np.uint8
    assert label.shape == (H, W)
    assert (
        int((label == 3).sum()) == 200 == int(drawn([(10, 10), (29, 10), (29, 19), (10, 19)]).sum())
    )
    assert set(np.unique(label).tolist()) == {0, 3}
    triangle = [[5.0, 5.0, 35.0, 5.0, 5.0, 35.0]]
    area = int((render_mask(H, W, [(1, triangle)]) == 1).sum())
    assert abs(area - 30 * 30 / 2) < 30  # the triangle's area, within its edge pixels


def test_rle_both_ways_and_later_over_earlier() -> None:
    left = np.zeros((H, W), np.uint8)
    left[5:25, 5:25] = 1
    right = np.zeros((H, W), np.uint8)
    right[15:35, 15:40] = 1
    label = render_mask(H, W, [(1, uncompressed(left)), (2, compressed(right)), (3, [])])
    assert int((label == 2).sum()) == int(right.sum())
    assert int((label == 1).sum()) == int(left.sum()) - int((left & right).sum())
    assert int((label == 0).sum()) == H * W - int((left | right).sum())


def test_values_past_255_make_a_16_bit_map_and_png() -> None:
    label = render_mask(H, W, [(1, RECTANGLE), (300, [[0.0, 0.0, 5.0, 0.0, 5.0, 5.0]])])
    assert label.dtype == np.uint16
    png = mask_png(label)
    back = png_pixels(png)
    assert back.dtype == np.uint16
    np.testing.assert_array_equal(back, label)


def test_png_reads_back_the_label_map() -> None:
    label = render_mask(H, W, [(7, RECTANGLE)])
    back = png_pixels(mask_png(label))
    assert back.shape == (H, W)
    np.testing.assert_array_equal(back, label)


@pytest.mark.parametrize(
    ("segmentation", "message"),
    [
        ([[1.0, 2.0, 3.0, 4.0, 5.0]], r"instance 1: polygon 0 has 5 coordinates, expected an even"),
        ([[1.0, 2.0, 3.0, 4.0]], r"polygon 0 has 4 coordinates"),
        ([[1, 2, "3", 4, 5, 6]], r"polygon 0 is not a list of numbers"),
        ([[1.0, 2.0, 3.0, float("nan"), 5.0, 6.0]], r"polygon 0 has a coordinate that is not"),
        ({"size": [H, W], "counts": [5, 10]}, r"counts add up to 15, expected 2000 \(40 x 50\)"),
        ({"size": [H, W], "counts": [5, -1, 1996]}, r"counts are not all integers >= 0"),
        ({"size": [W, H], "counts": [2000]}, r"RLE of size \[50, 40\], expected the image's"),
        ({"size": [H, W], "counts": 7}, r"RLE counts are a list or a string, found int"),
        ({"size": [H, W], "counts": "garbage!!"}, r"RLE that does not decode"),
        ("polygon", r"a list of polygons or an RLE object, found str"),
    ],
)
def test_bad_segmentations(segmentation: Any, message: str) -> None:
    with pytest.raises(SegmentationError, match=message) as caught:
        render_mask(H, W, [(1, RECTANGLE), (2, segmentation)])
    assert caught.value.instance == 1


def test_without_pycocotools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pycocotools", None)
    with pytest.raises(MissingPycocotoolsError, match=r"pip install 'fastpack\[coco\]'"):
        render_mask(H, W, [(1, RECTANGLE)])
