"""The samples of the frozen version-2 dataset (tests/formats/golden_v2/): every field type, an
optional field absent from some samples, zstd with and without a dictionary.

Every byte comes from this module and the format's writers, never from an image library (whose
output may change between versions): the JPEG is a constant and the PNG masks are built by hand
with stored (uncompressed) deflate blocks. To write the golden dataset again, after a deliberate
format change only: `python -m tests.formats._golden_v2 tests/formats/golden_v2`.
"""

from __future__ import annotations

import base64
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import Manifest, Schema, Zstd

from ._v2 import spec, wants_dictionary, write_v2_dataset

NUM_SAMPLES = 8
SAMPLES_PER_SHARD = 4
SIDE = 16  # the JPEG's and the masks' width and height

# A 16 x 16 baseline JPEG (4:2:0, quality 75), written once by simplejpeg.
JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwc"
    "KDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
    "MjIyMjIyMjIyMjIyMjIyMjIyMjL/wAARCAAQABADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcI"
    "CQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRol"
    "JicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ip"
    "qrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAA"
    "AAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLR"
    "ChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaX"
    "mJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEA"
    "PwDzJYeC+BzgnKjirsMLZ56jJ68fnT4oC/I5x+XvV+K1GQPXOcc4/GuaasjCML9D/9k="
)

SCHEMA = Schema(
    (
        spec("jpg", "jpeg"),
        spec("cls", "class", classes=("cat", "dog", "eel")),
        spec("seg.png", "png", geometry="mask"),
        spec("tags.json", "class_ids"),
        spec("boxes.npy", "ndarray", dtype="<f4", shape=(None, 4), geometry="boxes"),
        spec("txt", "text"),
        spec("caption.txt.zst", "text", zstd=wants_dictionary("caption.txt.zst", level=9)),
        spec("meta.json.zst", "json", optional=True, zstd=Zstd(level=3)),
        spec("bin", "raw"),
    )
)
CLASSES = ("cat", "dog", "eel")
_WORDS = (
    "a photo of the",
    "small",
    "striped",
    "cat",
    "dog",
    "eel",
    "sitting on",
    "a wooden table",
    "next to",
    "the window",
    "in bright light",
    "with a red ball",
    "near the river",
    "at night",
)


def png_gray(pixels: npt.NDArray[np.uint8]) -> bytes:
    """An 8-bit grayscale PNG of `pixels`, its image data in stored deflate blocks (level 0), so
    that no zlib version changes its bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    height, width = pixels.shape
    rows = b"".join(b"\0" + pixels[y].tobytes() for y in range(height))  # filter type 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 0))
        + chunk(b"IEND", b"")
    )


def mask(i: int) -> npt.NDArray[np.uint8]:
    """Sample `i`'s mask: class `i % 3 + 1` in a rectangle that moves with `i`, 0 elsewhere."""
    pixels = np.zeros((SIDE, SIDE), np.uint8)
    pixels[i : i + 6, 2 * i % SIDE : 2 * i % SIDE + 5] = i % 3 + 1
    return pixels


def caption(i: int) -> str:
    """About 520 bytes of text from a fixed vocabulary, different for each `i`: enough, over
    eight samples, to train a zstd dictionary."""
    words: list[str] = []
    state = i + 1
    while sum(len(w) + 1 for w in words) < 520:
        state = (state * 1103515245 + 12345) % 2**31
        words.append(_WORDS[state % len(_WORDS)])
    return " ".join(words) + "."


def boxes(i: int) -> npt.NDArray[np.float32]:
    """`i % 3` boxes (none for sample 0, 3, 6): (N, 4) float32, x0 y0 x1 y1."""
    return np.array([[j, i / 2, j + 5.5, i / 2 + 6] for j in range(i % 3)], np.float32).reshape(
        -1, 4
    )


def sample(i: int) -> dict[str, Any]:
    """Sample `i` as values; `meta.json.zst` only for even `i`."""
    value: dict[str, Any] = {
        "jpg": JPEG,
        "cls": i % 3,
        "seg.png": png_gray(mask(i)),
        "tags.json": list(range(i % 4)),
        "boxes.npy": boxes(i),
        "txt": f"sample {i}: ünïcode ✓",
        "caption.txt.zst": caption(i),
        "bin": bytes(range(i, 3 * i)),
    }
    if i % 2 == 0:
        value["meta.json.zst"] = {"index": i, "source": f"sample-{i}", "score": i / 4}
    return value


def samples() -> list[dict[str, Any]]:
    return [sample(i) for i in range(NUM_SAMPLES)]


def write_golden_v2(root: Path) -> Manifest:
    """The golden dataset in `root` (the dictionary trained on the captions)."""
    return write_v2_dataset(
        root, SCHEMA, samples(), samples_per_shard=SAMPLES_PER_SHARD, classes=CLASSES
    )


if __name__ == "__main__":
    write_golden_v2(Path(sys.argv[1]))
