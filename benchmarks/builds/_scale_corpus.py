"""The synthetic list-file source of the build-scale benchmark: a few thousand distinct tiny JPEGs
(gradients and noise, 16 to 24 px, Huffman-optimized so that most fit one 512-byte tar block) and
CSV list files of any length that repeat them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

IMAGES_DIR = "images"
_INFO = "corpus.json"
_LINES_PER_WRITE = 1 << 16
_TARGET_BYTES = 500


@dataclass(frozen=True, kw_only=True)
class Corpus:
    images: int
    classes: int
    min_bytes: int
    mean_bytes: float
    max_bytes: int
    side_px: tuple[int, int]
    quality: tuple[int, int]  # lowest and highest JPEG quality used


def _pixels(rng: np.random.Generator, side: int) -> npt.NDArray[np.uint8]:
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    tint = rng.uniform(0.3, 1.0, 3).astype(np.float32)
    base = np.stack([x, y, (x + y) / 2], axis=-1) * 255 * tint
    noise = rng.normal(0, 20, (side, side, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def _encode(pixels: npt.NDArray[np.uint8], quality: int) -> bytes:
    params = [
        cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_OPTIMIZE, 1,
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
    ]  # fmt: skip
    ok, buffer = cv2.imencode(".jpg", pixels, params)
    if not ok:
        raise RuntimeError("OpenCV could not encode a JPEG")
    return bytes(buffer.tobytes())


_LOWEST_QUALITY = 30  # JPEG quality the corpus never goes below to reach its size


def _small_jpeg(pixels: npt.NDArray[np.uint8]) -> tuple[bytes, int]:
    """The image at quality 75, or lower until it takes at most `_TARGET_BYTES`."""
    quality = 75
    data = _encode(pixels, quality)
    while len(data) > _TARGET_BYTES and quality > _LOWEST_QUALITY:
        quality -= 5
        data = _encode(pixels, quality)
    return data, quality


def make_corpus(root: Path, images: int, classes: int, seed: int = 0) -> Corpus:
    """Write `images` JPEGs to `root/images/NNNNNN.jpg` (kept when already made alike)."""
    info = root / _INFO
    if info.exists():
        found = json.loads(info.read_text())
        if found["images"] == images and found["classes"] == classes:
            found["side_px"], found["quality"] = tuple(found["side_px"]), tuple(found["quality"])
            return Corpus(**found)
    directory = root / IMAGES_DIR
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sizes, qualities, sides = [], [], []
    for k in range(images):
        side = int(rng.integers(16, 25))
        data, quality = _small_jpeg(_pixels(rng, side))
        (directory / f"{k:06d}.jpg").write_bytes(data)
        sizes.append(len(data))
        qualities.append(quality)
        sides.append(side)
    corpus = Corpus(
        images=images,
        classes=classes,
        min_bytes=min(sizes),
        mean_bytes=round(sum(sizes) / images, 1),
        max_bytes=max(sizes),
        side_px=(min(sides), max(sides)),
        quality=(min(qualities), max(qualities)),
    )
    info.write_text(json.dumps(asdict(corpus)))
    return corpus


def write_list(path: Path, lines: int, corpus: Corpus) -> Path:
    """A `path,label` CSV of `lines` rows cycling through the corpus's images, written
    streaming (kept when it already exists)."""
    if path.exists():
        return path
    names = [f"{IMAGES_DIR}/{k:06d}.jpg,{k % corpus.classes}\n" for k in range(corpus.images)]
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as file:
        file.write("path,label\n")
        for start in range(0, lines, _LINES_PER_WRITE):
            stop = min(start + _LINES_PER_WRITE, lines)
            file.write("".join(names[i % corpus.images] for i in range(start, stop)))
    tmp.replace(path)
    return path
