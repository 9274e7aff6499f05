"""A labeled ImageFolder drawn procedurally: real JPEG files whose class is visible in the pixels.

Each class has its own colour and shape (disk, square, stripes, ring); position, size, shade and
noise vary per image, so that a small model can learn the classes and a reader has real work.
"""

from __future__ import annotations

import colorsys
import os
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import simplejpeg

from .formats import FastpackError

Image = npt.NDArray[np.uint8]
SHAPES = ("disk", "square", "stripes", "ring")
NOISE = 8  # pixel noise amplitude, in levels
_MIN_SIDE = 8  # pixels


def class_colour(label: int, classes: int) -> npt.NDArray[np.float32]:
    """A bright RGB colour (0..255) per class, spread evenly around the hue circle."""
    r, g, b = colorsys.hsv_to_rgb(label / max(classes, 1), 0.8, 0.95)
    return np.array([r, g, b], np.float32) * 255


def _draw_shape(
    image: Image, shape: str, colour: tuple[int, ...], rng: np.random.Generator
) -> None:
    height, width = image.shape[:2]
    cy, cx = int(rng.uniform(0.3, 0.7) * height), int(rng.uniform(0.3, 0.7) * width)
    radius = int(rng.uniform(0.2, 0.35) * min(height, width))
    if shape == "disk":
        cv2.circle(image, (cx, cy), radius, colour, thickness=-1)
    elif shape == "square":
        cv2.rectangle(image, (cx - radius, cy - radius), (cx + radius, cy + radius), colour, -1)
    elif shape == "stripes":
        period = rng.uniform(0.08, 0.15) * width
        image[:, np.arange(width) % period < period / 2] = colour
    else:
        cv2.circle(image, (cx, cy), radius, colour, thickness=max(1, radius // 2))


def draw_image(  # noqa: PLR0913 -- keyword inputs
    label: int, classes: int, height: int, width: int, seed: int, *, noise: Image | None = None
) -> Image:
    """One RGB image of class `label`: a shaded background, the class's shape, noise.

    `noise` (uint8, 0..16, at least `height` x `width`) is added when given; else drawn here.
    """
    rng = np.random.default_rng(seed)
    colour = class_colour(label, classes)
    background = (255 - colour * rng.uniform(0.6, 1.0)) * np.linspace(0.25, 0.6, width)[:, None]
    image = np.ascontiguousarray(np.broadcast_to(background.astype(np.uint8), (height, width, 3)))
    _draw_shape(image, SHAPES[label % len(SHAPES)], tuple(int(c) for c in colour), rng)
    if noise is None:
        noise = rng.integers(0, 2 * NOISE + 1, (height, width, 3), dtype=np.uint8)
    cv2.add(image, noise[:height, :width], dst=image)  # saturating: +0..2*NOISE
    np.maximum(image, NOISE, out=image)
    image -= NOISE  # now -NOISE..+NOISE around the drawing, clipped to 0..255
    return image


def make_image_folder(  # noqa: PLR0913 -- public signature
    root: str | os.PathLike[str],
    *,
    images: int,
    classes: int,
    min_side: int = 300,
    max_side: int = 500,
    quality: int = 90,
    seed: int = 0,
) -> Path:
    """Write `images` JPEGs into `root/<class>/<n>.jpg`, round-robin over `classes` classes."""
    if images < 1 or classes < 1 or not _MIN_SIDE <= min_side <= max_side:
        raise FastpackError(
            f"synthetic images: need images >= 1, classes >= 1 and {_MIN_SIDE} <= min_side <= "
            f"max_side, got images={images}, classes={classes}, sides {min_side}..{max_side}"
        )
    root = Path(root)
    rng = np.random.default_rng(seed)
    names = [f"class_{c:02d}_{SHAPES[c % len(SHAPES)]}" for c in range(classes)]
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
    margin = 32  # noise is cut from one shared tile at a random offset per image
    tile = rng.integers(0, 2 * NOISE + 1, (max_side + margin, max_side + margin, 3), np.uint8)
    for n in range(images):
        label = n % classes
        height, width = (int(v) for v in rng.integers(min_side, max_side + 1, 2))
        dy, dx = (int(v) for v in rng.integers(0, margin + 1, 2))
        noise = tile[dy : dy + height, dx : dx + width]
        pixels = draw_image(label, classes, height, width, seed * 1_000_003 + n, noise=noise)
        data = simplejpeg.encode_jpeg(pixels, quality=quality, colorspace="RGB")
        (root / names[label] / f"{n:06d}.jpg").write_bytes(data)
    return root
