"""Transforms: shapes, seeding, and the DCT-scaled path against a full-decode reference."""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop
from fastpack.reader.image import Box, random_resized_box, sample_draws
from fastpack.reader.image.decode import crop_resize, dct_shift, scaled_window, snap_to_scale
from fastpack.reader.image.transforms import PlannedTransform
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import synthetic_rgb

from ..conftest import Built

DRAWS = 23


def draws_of(seed: int, epoch: int, index: int) -> list[float]:
    """One sample's draws, as the Dataset derives them."""
    return list(sample_draws(seed, epoch, [index], DRAWS)[0])


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * math.log10(255**2 / mse)


def photos(count: int, subsampling: str) -> list[bytes]:
    """Photo-like 400x500 JPEGs."""
    return [
        bytes(
            simplejpeg.encode_jpeg(
                synthetic_rgb(400, 500, seed), quality=90, colorsubsampling=subsampling
            )
        )
        for seed in range(count)
    ]


def reference(data: bytes, box: Box, shape: tuple[int, int], flip: bool) -> np.ndarray:
    """Full decode, the same (integral) box, INTER_AREA resize."""
    image: npt.NDArray[np.uint8] = simplejpeg.decode_jpeg(data, colorspace="RGB")
    top, left = round(box.top), round(box.left)
    crop = image[top : top + round(box.height), left : left + round(box.width)]
    out = cv2.resize(crop, (shape[1], shape[0]), interpolation=cv2.INTER_AREA)
    return out[:, ::-1] if flip else out


@pytest.mark.parametrize("subsampling", ["420", "444"])
@pytest.mark.parametrize("shape", [(224, 224), (112, 112), (64, 96)])
def test_random_resized_crop_matches_full_decode(subsampling: str, shape: tuple[int, int]) -> None:
    transform = RandomResizedCrop(shape)
    scores, scaled = [], 0
    for n, data in enumerate(photos(12, subsampling)):
        for i in range(4):
            box, flip = transform.params(400, 500, draws_of(n, 0, i))
            scaled += dct_shift(box.height, box.width, *shape) > 0
            out = transform(data, draws_of(n, 0, i))
            scores.append(psnr(out, reference(data, box, shape, flip)))
    assert np.mean(scores) >= 32, scores
    assert min(scores) >= 26, scores
    if shape[0] < 200:  # boxes of twice the output decode at a reduced DCT scale
        assert scaled >= len(scores) // 4


def test_center_crop_matches_full_decode() -> None:
    for size in (224, 96, 64):
        transform = CenterCrop(size)
        scores = []
        for data in photos(8, "420"):
            image = simplejpeg.decode_jpeg(data, colorspace="RGB")
            short = round(size / 0.875)
            resized = cv2.resize(
                image, (int(short * 500 / 400), short), interpolation=cv2.INTER_AREA
            )
            top = round((resized.shape[0] - size) / 2)
            left = round((resized.shape[1] - size) / 2)
            expected = resized[top : top + size, left : left + size]
            scores.append(psnr(transform(data), expected))
        assert np.mean(scores) >= 32, (size, scores)


def test_center_crop_box() -> None:
    transform = CenterCrop(224)
    assert transform.resize == 256
    box = transform.box(400, 600)  # resized to 256 x 384, crop at (16, 80)
    assert box.height == pytest.approx(224 * 400 / 256)
    assert box.top == pytest.approx(16 * 400 / 256)
    assert box.left == pytest.approx(80 * 600 / 384)
    tall = transform.box(600, 400)
    assert (tall.width, tall.left) == pytest.approx((224 * 400 / 256, 16 * 400 / 256))
    small = CenterCrop(64).box(400, 500)  # a 350-pixel box for 64 pixels: decoded at 1/4
    assert dct_shift(small.height, small.width, 64, 64) == 2


@pytest.mark.parametrize(
    "transform", [RandomResizedCrop(32), RandomResizedCrop((24, 40)), CenterCrop((40, 24))]
)
def test_output_shape_and_buffer(transform: RandomResizedCrop | CenterCrop) -> None:
    data = photos(1, "420")[0]
    out = transform(data, draws_of(0, 0, 0))
    assert out.shape == (*transform.output_shape, 3)
    assert out.dtype == np.uint8
    buffer = np.zeros_like(out)
    assert transform(data, draws_of(0, 0, 0), buffer) is buffer
    np.testing.assert_array_equal(buffer, out)
    with pytest.raises(ValueError, match=r"out must be a C-contiguous uint8 array of shape"):
        transform(data, draws_of(0, 0, 0), np.zeros((5, 5, 3), np.uint8))


@pytest.mark.parametrize(
    "transform",
    [RandomResizedCrop(224), RandomResizedCrop(64, max_upscale=2.0), CenterCrop((40, 24))],
)
def test_plan_then_render_is_the_call(transform: RandomResizedCrop | CenterCrop) -> None:
    assert isinstance(transform, PlannedTransform)
    data = photos(1, "420")[0]
    for i in range(12):
        draws = draws_of(4, 0, i)
        plan = transform.plan(data, draws)
        assert plan.size == (400, 500)
        if isinstance(transform, RandomResizedCrop):
            box, flip, shift = transform._plan(400, 500, draws)
            assert plan == (plan.size, shift, scaled_window(box, shift), flip)
        out = np.empty((*transform.output_shape, 3), np.uint8)
        transform.render(data, plan, out)
        np.testing.assert_array_equal(out, transform(data, draws))
    with pytest.raises(ValueError, match=r"out must be a C-contiguous uint8 array of shape"):
        transform.render(data, plan, np.zeros((5, 5, 3), np.uint8))


def test_flip_mirrors_the_same_crop() -> None:
    data = photos(1, "444")[0]
    for shape in [(224, 224), (64, 64)]:  # full and 1/2 scale, then 1/4 and 1/8 scale
        for i in range(6):
            plain = RandomResizedCrop(shape, flip_prob=0.0)(data, draws_of(1, 0, i))
            mirrored = RandomResizedCrop(shape, flip_prob=1.0)(data, draws_of(1, 0, i))
            np.testing.assert_array_equal(mirrored, plain[:, ::-1])


def test_dataset_draws_depend_on_seed_epoch_index(build_dataset: Callable[..., Built]) -> None:
    path = build_dataset().path
    a = Dataset(path, transform=RandomResizedCrop(32), seed=7)
    b = Dataset(path, transform=RandomResizedCrop(32), seed=7)
    b.__getitems__([3, 2, 1])  # reading order and history do not matter
    for i in range(len(a)):
        np.testing.assert_array_equal(a[i][0], b[i][0])
    first = a.__getitems__(list(range(len(a))))[0]
    a.set_epoch(1)
    second = a.__getitems__(list(range(len(a))))[0]
    other_seed = Dataset(path, transform=RandomResizedCrop(32), seed=8).__getitems__(
        list(range(len(a)))
    )[0]
    for k in range(len(a)):
        assert not np.array_equal(first[k], second[k])
        assert not np.array_equal(first[k], other_seed[k])


def test_center_crop_is_deterministic(build_dataset: Callable[..., Built]) -> None:
    path = build_dataset().path
    ds = Dataset(path, transform=CenterCrop(32), seed=1)
    before = ds.__getitems__([0, 1])[0]
    ds.set_epoch(5)
    np.testing.assert_array_equal(ds.__getitems__([0, 1])[0], before)


@given(
    height=st.integers(1, 3000),
    width=st.integers(1, 3000),
    draws=st.lists(st.floats(0, 1, exclude_max=True), min_size=DRAWS, max_size=DRAWS),
)
def test_random_box_inside_image(height: int, width: int, draws: list[float]) -> None:
    box = random_resized_box(height, width, (0.08, 1.0), (3 / 4, 4 / 3), draws)
    assert box.height > 0
    assert box.width > 0
    assert 0 <= box.top <= height - box.height
    assert 0 <= box.left <= width - box.width


@pytest.mark.parametrize(
    ("size", "expected"),
    [((100, 100), Box(0, 0, 100, 100)), ((100, 300), Box(0, 83, 100, 133)),
     ((300, 100), Box(83, 0, 133, 100))],
)  # fmt: skip
def test_random_box_fallback_is_a_centre_crop(size: tuple[int, int], expected: Box) -> None:
    # an area scale above 1 never fits, so every try fails and the clamped centre crop remains
    assert random_resized_box(*size, (2.0, 3.0), (3 / 4, 4 / 3), [0.5] * DRAWS) == expected


def test_fast_decode_options_stay_close() -> None:
    data = photos(1, "420")[0]
    exact = RandomResizedCrop(96)(data, draws_of(0, 0, 0))
    fast = RandomResizedCrop(96, fastdct=True, fastupsample=True)(data, draws_of(0, 0, 0))
    assert psnr(exact, fast) > 30


def test_bad_transform_arguments() -> None:
    with pytest.raises(ValueError, match="size must be positive"):
        RandomResizedCrop(0)
    with pytest.raises(ValueError, match=r"scale must be \(low, high\) with 0 < low <= high"):
        RandomResizedCrop(32, scale=(0.5, 0.1))
    with pytest.raises(ValueError, match=r"ratio must be"):
        RandomResizedCrop(32, ratio=(0.0, 1.0))
    with pytest.raises(ValueError, match=r"flip_prob must be in \[0, 1\]"):
        RandomResizedCrop(32, flip_prob=1.5)
    with pytest.raises(ValueError, match=r"resize \(100\) must be >= the crop size 128"):
        CenterCrop(128, resize=100)
    with pytest.raises(ValueError, match=r"RandomResizedCrop needs 23 draws \(see sample_draws\)"):
        RandomResizedCrop(32)(photos(1, "420")[0])
    with pytest.raises(ValueError, match="RandomResizedCrop needs 23 draws"):
        RandomResizedCrop(32)(photos(1, "420")[0], [0.5] * 22)


@pytest.mark.parametrize("flip", [False, True])
def test_large_shrink_is_box_filtered(flip: bool) -> None:
    """Shrinking by 2.5x to 9x: halvings then bilinear stay close to INTER_AREA."""
    image = synthetic_rgb(400, 500, 3)
    for (top, left, height, width), shape in [
        ((10, 20, 360, 450), (40, 50)),
        ((0, 0, 400, 500), (100, 200)),
    ]:
        out = np.empty((*shape, 3), np.uint8)
        crop_resize(image, Box(top, left, height, width), out, flip=flip)
        region = image[top : top + height, left : left + width]
        expected = cv2.resize(region, shape[::-1], interpolation=cv2.INTER_AREA)
        assert psnr(out, expected[:, ::-1] if flip else expected) > 35


def test_max_upscale_sets_the_decode_scale() -> None:
    # a 300-pixel box for 224 pixels: 1/2 scale with up to 2x enlargement, full scale without
    assert dct_shift(300, 300, 224, 224, 2.0) == 1
    assert dct_shift(300, 300, 224, 224, 1.0) == 0
    assert dct_shift(300, 300, 224, 224, 1.25) == 0  # 150 x 1.25 < 224
    assert dct_shift(224, 224, 224, 224, 2.0) == 1
    assert dct_shift(223, 224, 224, 224, 2.0) == 0
    assert dct_shift(800, 800, 224, 224, 2.0) == 2
    assert dct_shift(900, 900, 224, 224, 2.0) == 3
    exact, fast = RandomResizedCrop(224), RandomResizedCrop(224, max_upscale=2.0)
    assert exact.max_upscale == 1.0  # full quality is the default
    exact_shifts = [exact._plan(400, 500, draws_of(0, 0, i))[2] for i in range(40)]
    fast_shifts = [fast._plan(400, 500, draws_of(0, 0, i))[2] for i in range(40)]
    assert exact_shifts == [0] * 40  # no box of a 400x500 image covers 224 at 1/2 scale
    assert sum(fast_shifts) >= 20  # most boxes decode at 1/2 scale
    with pytest.raises(ValueError, match=r"max_upscale must be >= 1, got 0.5"):
        RandomResizedCrop(224, max_upscale=0.5)
    with pytest.raises(ValueError, match=r"max_upscale must be >= 1"):
        CenterCrop(224, max_upscale=float("nan"))
    assert "max_upscale=2.0" in repr(fast)


def test_boxes_lie_on_the_grid_of_their_decode_scale() -> None:
    transform = RandomResizedCrop(64, max_upscale=2.0)
    seen = set()
    for i in range(200):
        box, _, shift = transform._plan(400, 500, draws_of(3, 0, i))
        assert (box, _) == transform.params(400, 500, draws_of(3, 0, i))
        step = 1 << shift
        seen.add(step)
        for edge in (box.top, box.left, box.top + box.height, box.left + box.width):
            assert edge % step == 0, (box, step)
        assert box.top + box.height <= 400
        assert box.left + box.width <= 500
    assert seen == {2, 4, 8}  # 64 pixels from boxes of 126 to 500 pixels


@given(
    height=st.integers(1, 2000),
    width=st.integers(1, 2000),
    out=st.integers(1, 256),
    draws=st.lists(st.floats(0, 1, exclude_max=True), min_size=DRAWS, max_size=DRAWS),
)
def test_snap_to_scale(height: int, width: int, out: int, draws: list[float]) -> None:
    box = random_resized_box(height, width, (0.08, 1.0), (3 / 4, 4 / 3), draws)
    shift = dct_shift(box.height, box.width, out, out, 2.0)
    assert snap_to_scale(box, 0, height, width) == box
    snapped = snap_to_scale(box, shift, height, width)
    step = 1 << shift
    edges = zip(
        (box.top, box.left, box.top + box.height, box.left + box.width),
        (snapped.top, snapped.left, snapped.top + snapped.height, snapped.left + snapped.width),
        (height, width, height, width),
        strict=True,
    )
    # half a step; a box under one step grows to one; the image's partial last pixel is cut off
    bound = step / 2 if min(box.height, box.width) >= step else step
    for old, new, size in edges:
        assert new % step == 0
        assert 0 <= new <= max(size - size % step, step)
        assert abs(new - old) <= bound + size % step
    assert snapped.height >= step
    assert snapped.width >= step


def test_threads_decode_independently() -> None:
    """Each thread decodes into its own scratch buffer: concurrent transforms match serial."""

    blobs = photos(6, "420")
    transform = RandomResizedCrop(64)
    jobs = [(k, i) for k in range(len(blobs)) for i in range(8)]
    serial = [transform(blobs[k], draws_of(0, k, i)) for k, i in jobs]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda job: transform(blobs[job[0]], draws_of(0, *job)), jobs))
    for a, b in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(a, b)
