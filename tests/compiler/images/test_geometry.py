"""Masks shrunk nearest-neighbour as PNGs of their own kind, and boxes scaled with the image."""

from __future__ import annotations

import io

import numpy as np
import pytest
from fastpack.compiler.images.geometry import MaskError, png_size, scale_boxes, shrink_mask
from PIL import Image

RNG = np.random.default_rng(0)


def png(image: Image.Image, **options: int) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", **options)
    return buffer.getvalue()


def palette_image(colors: int) -> Image.Image:
    image = Image.fromarray(RNG.integers(0, colors, (30, 40), dtype=np.uint8), "P")
    image.putpalette([(7 * i + 50 * (i % 3)) % 256 for i in range(3 * colors)])
    return image


IMAGES = {
    "palette": (palette_image(21), {}),
    "palette 2-bit": (palette_image(4), {"bits": 2}),
    "gray": (Image.fromarray(RNG.integers(0, 256, (30, 40), dtype=np.uint8), "L"), {}),
    "gray 16-bit": (Image.fromarray(RNG.integers(0, 65536, (30, 40), dtype=np.uint16)), {}),
    "1-bit": (Image.fromarray(RNG.integers(0, 2, (30, 40)).astype(bool)), {}),
    "gray + alpha": (Image.fromarray(RNG.integers(0, 256, (30, 40, 2), dtype=np.uint8), "LA"), {}),
    "rgb": (Image.fromarray(RNG.integers(0, 256, (30, 40, 3), dtype=np.uint8), "RGB"), {}),
    "rgba": (Image.fromarray(RNG.integers(0, 256, (30, 40, 4), dtype=np.uint8), "RGBA"), {}),
}


@pytest.mark.parametrize("kind", list(IMAGES))
def test_shrink_keeps_the_kind_and_samples(kind: str) -> None:
    image, options = IMAGES[kind]
    data = png(image, **options)
    assert png_size(data) == (30, 40)
    same = Image.open(io.BytesIO(shrink_mask(data, (30, 40))))
    assert same.mode == image.mode
    assert np.array_equal(np.array(same), np.array(Image.open(io.BytesIO(data))))
    small = shrink_mask(data, (15, 20))
    assert png_size(small) == (15, 20)
    assert np.array_equal(np.array(Image.open(io.BytesIO(small))), np.array(image)[1::2, 1::2])
    assert shrink_mask(data, (15, 20)) == small  # deterministic


def test_not_a_png() -> None:
    with pytest.raises(MaskError, match="not a PNG"):
        png_size(b"\xff\xd8\xff\xe0 a JPEG")


def test_scale_boxes() -> None:
    boxes = np.array([[10, 20, 30, 40]], np.int32)
    assert scale_boxes(boxes, (0.5, 0.25)).tolist() == [[2, 10, 8, 20]]
    floats = np.array([[1.0, 1.0, 3.0, 3.0]], np.float32)
    assert scale_boxes(floats, (0.5, 0.5)).dtype == np.float32
