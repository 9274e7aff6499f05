"""RandomResizedCrop + horizontal flip, with torchvision's semantics, for the peers that have no
transform of their own: a PIL version (torchvision on PIL images) and a numpy/OpenCV version, the
latter after a simplejpeg or an OpenCV decode."""

from __future__ import annotations

import math
import random
from io import BytesIO
from typing import cast

import cv2
import numpy as np
import numpy.typing as npt
import simplejpeg
from PIL import Image

SIZE = 224
SCALE = (0.08, 1.0)
RATIO = (3 / 4, 4 / 3)
FLIP_PROB = 0.5

Box = tuple[int, int, int, int]  # top, left, height, width
Pixels = npt.NDArray[np.uint8]


def crop_box(height: int, width: int, rng: random.Random) -> Box:
    """torchvision's `RandomResizedCrop.get_params`: ten tries, then a ratio-clamped centre crop."""
    area = height * width
    log_lo, log_hi = math.log(RATIO[0]), math.log(RATIO[1])
    for _ in range(10):
        target = area * rng.uniform(*SCALE)
        aspect = math.exp(rng.uniform(log_lo, log_hi))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    in_ratio = width / height
    if in_ratio < RATIO[0]:
        w, h = width, round(width / RATIO[0])
    elif in_ratio > RATIO[1]:
        w, h = round(height * RATIO[1]), height
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def pil_random_resized_crop(image: Image.Image, rng: random.Random) -> Pixels:
    """torchvision on a PIL image: `convert("RGB")`, crop, resize BILINEAR, maybe flip."""
    image = image.convert("RGB")
    top, left, h, w = crop_box(image.height, image.width, rng)
    image = image.crop((left, top, left + w, top + h)).resize(
        (SIZE, SIZE), Image.Resampling.BILINEAR
    )
    if rng.random() < FLIP_PROB:
        image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return np.asarray(image)


def pil_decode_crop(data: bytes, rng: random.Random) -> Pixels:
    """PIL decode of JPEG bytes, then `pil_random_resized_crop`."""
    return pil_random_resized_crop(Image.open(BytesIO(data)), rng)


_LINEAR_SHRINK = 2  # up to this shrink factor bilinear; beyond, INTER_AREA


def cv_random_resized_crop(pixels: Pixels, rng: random.Random) -> Pixels:
    """The same box on a decoded RGB array; OpenCV resize (LINEAR up to 2x shrink, else AREA)."""
    top, left, h, w = crop_box(pixels.shape[0], pixels.shape[1], rng)
    shrink = max(h, w) / SIZE
    interpolation = cv2.INTER_LINEAR if shrink <= _LINEAR_SHRINK else cv2.INTER_AREA
    crop = pixels[top : top + h, left : left + w]
    out = cast(Pixels, cv2.resize(crop, (SIZE, SIZE), interpolation=interpolation))
    if rng.random() < FLIP_PROB:
        out = np.ascontiguousarray(out[:, ::-1])
    return out


def simplejpeg_decode_crop(data: bytes, rng: random.Random) -> Pixels:
    """Full-size simplejpeg decode, then `cv_random_resized_crop`."""
    return cv_random_resized_crop(simplejpeg.decode_jpeg(data, colorspace="RGB"), rng)


def cv2_decode_crop(data: bytes, rng: random.Random) -> Pixels:
    """Full-size OpenCV decode (`cv2.imdecode`, BGR), then `cv_random_resized_crop`; the channels
    are swapped to RGB on the 224 x 224 output, where it costs least (the crop, resize and flip
    do not depend on the channel order)."""
    bgr = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"OpenCV could not decode a {len(data)}-byte image")
    out = cv_random_resized_crop(cast(Pixels, bgr), rng)
    return cast(Pixels, cv2.cvtColor(out, cv2.COLOR_BGR2RGB))


def single_threaded_opencv() -> None:
    """OpenCV without its thread pool in this process and in the worker processes it forks
    afterwards: the workers are the parallelism. Called by a peer's `loader` before any worker
    starts (setting it inside a forked worker whose parent had a live pool can deadlock)."""
    cv2.setNumThreads(1)
