"""A multi-field (version 2) dataset for the reader tests: each sample's image holds a filled
green rectangle on a grey, gently textured background, and the sample stores that rectangle as
a box (with a second, small box in the image's top-left corner) and as a mask; beside them a
label, per-box class ids, a fixed-shape array, an optional caption, zstd text with a
dictionary, JSON and raw bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import simplejpeg
from fastpack.formats import Schema

from tests.formats._v2 import spec, wants_dictionary, write_v2_dataset

GREEN = (20, 230, 40)
SCHEMA = Schema(
    (
        spec("jpg", "jpeg"),
        spec("cls", "class"),
        spec("seg.png", "png", geometry="mask"),
        spec("boxes.npy", "ndarray", dtype="<f4", shape=(None, 4), geometry="boxes"),
        spec("ids.json", "class_ids"),
        spec("emb.npy", "ndarray", dtype="<f4", shape=(3,)),
        spec("txt", "text", optional=True),
        spec("caption.txt.zst", "text", zstd=wants_dictionary("caption.txt.zst")),
        spec("meta.json", "json"),
        spec("raw.bin", "raw"),
    )
)
ALL = SCHEMA.names


def rectangle_image(
    height: int, width: int, box: tuple[int, int, int, int], seed: int
) -> npt.NDArray[np.uint8]:
    """A grey image with low-amplitude noise and a filled GREEN rectangle `box` (x0, y0, x1,
    y1, pixel edges)."""
    rng = np.random.default_rng(seed)
    image = np.clip(rng.normal(120, 6, (height, width, 3)), 0, 255).astype(np.uint8)
    x0, y0, x1, y1 = box
    image[y0:y1, x0:x1] = GREEN
    return image


def png(mask: npt.NDArray[np.uint8] | npt.NDArray[np.uint16]) -> bytes:
    ok, encoded = cv2.imencode(".png", mask)
    if not ok:
        raise RuntimeError("cv2 could not encode a PNG")
    return encoded.tobytes()


def make_samples(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """`count` samples of SCHEMA; every third one lacks its optional `txt`."""
    rng = np.random.default_rng(seed)
    samples = []
    for k in range(count):
        height, width = (int(v) for v in rng.integers(60, 120, 2))
        x0, y0 = int(rng.integers(6, width // 2)), int(rng.integers(6, height // 2))
        x1 = int(rng.integers(x0 + width // 4, width - 2))
        y1 = int(rng.integers(y0 + height // 4, height - 2))
        image = rectangle_image(height, width, (x0, y0, x1, y1), seed * 1000 + k)
        mask = np.zeros((height, width), np.uint8)
        mask[y0:y1, x0:x1] = 1 + k % 5
        boxes = np.array([[x0, y0, x1, y1], [0, 0, 4, 4]], np.float32)
        sample: dict[str, Any] = {
            "jpg": bytes(simplejpeg.encode_jpeg(image, quality=95, colorsubsampling="444")),
            "cls": k % 3,
            "seg.png": png(mask),
            "boxes.npy": boxes,
            "ids.json": list(range(k % 4)),
            "emb.npy": np.array([k, k + 0.5, -k], np.float32),
            "caption.txt.zst": f"sample {k}: a green box at {x0},{y0} " * 20,
            "meta.json": {"k": k, "name": f"s{k}", "tags": ["a"] * (k % 3)},
            "raw.bin": bytes([k]) * (k + 1),
        }
        if k % 3 != 2:
            sample["txt"] = f"caption {k} " + "é" * k
        samples.append(sample)
    return samples


def write_fields_dataset(root: Path, count: int = 10, samples_per_shard: int = 4) -> Path:
    """The dataset of `make_samples(count)` at `root` (`count` >= 8: the caption's zstd
    dictionary is trained on them)."""
    write_v2_dataset(root, SCHEMA, make_samples(count), samples_per_shard=samples_per_shard)
    return root
