"""Masks and boxes follow the image through the transforms: the same crop, flip and scale."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from fastpack.reader.image import (
    Box,
    CenterCrop,
    Crop,
    RandomResizedCrop,
    crop_boxes,
    crop_mask,
    sample_draws,
)
from fastpack.reader.image.decode import crop_resize, sampled_region

from ..map_style._fields_data import GREEN, rectangle_image

BoxArray = npt.NDArray[np.float32]


def green_pixels(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """Where `image` shows the GREEN rectangle (JPEG and resampling blur its edges a little)."""
    pixels = image.astype(np.int16)
    green = pixels[..., 1] - np.maximum(pixels[..., 0], pixels[..., 2])
    expected = GREEN[1] - max(GREEN[0], GREEN[2])
    return np.asarray(green > expected // 2 + 30)


def bounds(mask: npt.NDArray[np.bool_]) -> BoxArray:
    """x0, y0, x1, y1 (pixel edges) of the True pixels of `mask`."""
    ys, xs = np.nonzero(mask)
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float32)


def test_crop_boxes_moves_scales_flips_and_clips() -> None:
    boxes = np.array([[10, 20, 30, 60], [0, 0, 5, 5], [45, 40, 90, 90]], np.int32)
    crop = Crop(Box(top=20, left=10, height=40, width=40), (20, 80), flip=False)
    moved = crop_boxes(boxes, crop)  # x scaled by 2, y by 0.5; the second box is outside
    assert moved.dtype == np.float32
    np.testing.assert_allclose(moved, [[0, 0, 40, 20], [70, 10, 80, 20]])
    flipped = crop_boxes(boxes, Crop(crop.region, crop.output_shape, flip=True))
    np.testing.assert_allclose(flipped, [[40, 0, 80, 20], [0, 10, 10, 20]])
    kept = crop_boxes(boxes, crop, drop_empty=False)  # rows stay paired with per-box values
    np.testing.assert_allclose(kept, [[0, 0, 40, 20], [0, 0, 0, 0], [70, 10, 80, 20]])
    assert crop_boxes(np.zeros((0, 4), np.float64), crop).dtype == np.float64
    with pytest.raises(ValueError, match=r"boxes are N x 4 \(x0, y0, x1, y1\), got shape \(4,\)"):
        crop_boxes(np.zeros(4), crop)


def test_crop_mask_is_nearest_neighbour() -> None:
    mask = np.arange(12, dtype=np.uint8).reshape(3, 4)
    identity = Crop(Box(0, 0, 3, 4), (3, 4), flip=False)
    np.testing.assert_array_equal(crop_mask(mask, identity), mask)
    np.testing.assert_array_equal(
        crop_mask(mask, Crop(identity.region, (3, 4), flip=True)), mask[:, ::-1]
    )
    doubled = crop_mask(mask, Crop(Box(1, 2, 2, 2), (4, 4), flip=False))
    np.testing.assert_array_equal(doubled, np.repeat(np.repeat(mask[1:, 2:], 2, 0), 2, 1))
    labels = np.random.default_rng(0).integers(0, 3, (50, 60)).astype(np.uint8) * 40
    shrunk = crop_mask(labels, Crop(Box(3.5, 7.2, 41.3, 29.9), (17, 9), flip=True))
    assert set(np.unique(shrunk)) <= {0, 40, 80}  # labels are never blended
    out = np.empty((17, 9), np.uint16)
    with pytest.raises(ValueError, match=r"becomes uint8 \(17, 9\), which does not fit"):
        crop_mask(labels, Crop(Box(0, 0, 50, 60), (17, 9), flip=False), out)


@pytest.mark.parametrize(
    "transform",
    [
        RandomResizedCrop(48, scale=(0.05, 1.0)),  # often decoded at 1/2 or 1/4: a snapped box
        RandomResizedCrop((40, 64), scale=(0.3, 1.0), max_upscale=1.0),
        RandomResizedCrop(160, scale=(0.5, 1.0)),  # enlarged
        CenterCrop(40),
        CenterCrop((56, 32), resize=60),
    ],
)
def test_box_and_mask_follow_the_rectangle(transform: RandomResizedCrop | CenterCrop) -> None:
    """A green rectangle in the image, its box and its mask: through the transform, the box and
    the mask must lie where the rectangle lands in the output image, flips included."""
    height, width = 150, 210
    rect = (40, 30, 170, 110)
    data = simplejpeg.encode_jpeg(
        rectangle_image(height, width, rect, 0), quality=95, colorsubsampling="444"
    )
    mask = np.zeros((height, width), np.uint8)
    mask[rect[1] : rect[3], rect[0] : rect[2]] = 7
    boxes = np.array([rect], np.float32)
    flips = visible = 0
    for seed in range(60):
        draws = sample_draws(seed, 0, [0], transform.draws)[0].tolist() if transform.draws else None
        image = transform(data, draws)
        crop = transform.crop(height, width, draws)
        flips += crop.flip
        green = green_pixels(image)
        moved = crop_boxes(boxes, crop)
        if not green.any():
            assert len(moved) == 0 or (moved[0, 2:] - moved[0, :2]).min() < 1.5
            continue
        visible += 1
        assert len(moved) == 1, seed
        np.testing.assert_allclose(moved[0], bounds(green), atol=1.6, err_msg=f"seed {seed}")
        followed = crop_mask(mask, crop) == 7
        assert followed.shape == image.shape[:2]
        disagree = followed != green
        edge = 2 * (image.shape[0] + image.shape[1])
        assert disagree.sum() <= edge, seed  # only along the rectangle's edges
        assert not (disagree & ~(_near_edge(followed) | _near_edge(green))).any(), seed
    assert visible > 30
    if isinstance(transform, RandomResizedCrop):
        assert 10 < flips < 50


def _near_edge(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """Pixels within one pixel of a boundary between True and False in `mask` (the edge of
    a rectangle that ends inside a pixel is where resampling blends it with the background)."""
    padded = np.pad(mask, 1, mode="edge")
    near = np.zeros_like(mask)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            shifted = padded[1 + dy : 1 + dy + mask.shape[0], 1 + dx : 1 + dx + mask.shape[1]]
            near |= shifted != mask
    return near


def test_sampled_region_leaves_out_what_halvings_drop() -> None:
    assert sampled_region(Box(0, 16, 64, 64), 1, 32, 32) == Box(0, 16, 64, 64)
    # 67 pixels for 16: halved twice (67 -> 33 -> 16), the odd last ones dropped: 64 are used
    assert sampled_region(Box(2, 3, 67, 67), 0, 16, 16) == Box(2, 3, 64, 64)
    image = np.random.default_rng(1).integers(0, 256, (80, 80, 3)).astype(np.uint8)
    whole, used = np.empty((16, 16, 3), np.uint8), np.empty((16, 16, 3), np.uint8)
    crop_resize(image, Box(2, 3, 67, 67), whole)
    crop_resize(image, Box(2, 3, 64, 64), used)
    np.testing.assert_array_equal(whole, used)
