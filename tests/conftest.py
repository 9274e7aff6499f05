"""Shared fixtures: real JPEG (and other image) bytes made procedurally, in tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest
import simplejpeg

pytest_plugins = [
    "tests.s3_server",
    "tests.shaping_proxy",
    "tests.dask_cluster",
    "tests.network_fs",
]


def synthetic_rgb(height: int, width: int, seed: int) -> np.ndarray:
    """A smooth, textured RGB image (gradients + blobs + noise) that compresses like a photo."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    img = np.empty((height, width, 3), np.float32)
    for c in range(3):
        freq = rng.uniform(0.005, 0.05, 2)
        fx, fy, phase = float(freq[0]), float(freq[1]), rng.uniform(0, 6.3)
        img[..., c] = 127 + 100 * np.sin(fx * x + fy * y + phase)
    img += rng.normal(0, 12, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def jpeg_bytes(height: int = 64, width: int = 80, seed: int = 0, quality: int = 90) -> bytes:
    return bytes(simplejpeg.encode_jpeg(synthetic_rgb(height, width, seed), quality=quality))


def png_bytes(height: int = 48, width: int = 40, seed: int = 0, alpha: bool = False) -> bytes:
    rgb = synthetic_rgb(height, width, seed)
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    if alpha:
        bgr = np.dstack([bgr, np.full((height, width), 128, np.uint8)])
    ok, buf = cv2.imencode(".png", bgr)
    if not ok:
        raise RuntimeError("cv2 could not encode a PNG")
    return buf.tobytes()


@pytest.fixture
def make_image_folder(tmp_path: Path) -> Callable[..., Path]:
    """Factory: an ImageFolder tree `root/<class>/<n>.jpg` of real JPEGs with varied sizes."""

    def make(
        classes: int = 3, per_class: int = 4, seed: int = 0, name: str = "src", size: int = 64
    ) -> Path:
        root = tmp_path / name
        rng = np.random.default_rng(seed)
        for c in range(classes):
            d = root / f"class_{c:02d}"
            d.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                h, w = (int(v) for v in rng.integers(size // 2, size * 2, 2))
                (d / f"img_{i:04d}.jpg").write_bytes(
                    jpeg_bytes(h, w, seed=seed * 10_000 + c * 1000 + i)
                )
        return root

    return make
