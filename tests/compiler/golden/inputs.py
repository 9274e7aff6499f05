"""Deterministic inputs of every source format for the golden builds: real JPEG (baseline and
progressive), PNG and broken image bytes, list files, webdataset tars, Parquet and COCO files.

Everything here is made from seeds alone and depends on no fastpack module, so that the same
inputs can be built by the code of any commit (see `write_digests.py`)."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import simplejpeg

CLASSES = ("cat", "dog", "owl")
PER_CLASS = 6


def rgb(height: int, width: int, seed: int) -> np.ndarray:
    """Smooth gradients plus seeded noise: photo-like enough for every encoder."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack(
        [x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), (x + y + seed * 17) % 256],
        axis=-1,
    )
    noise = rng.integers(0, 40, (height, width, 3))
    return np.ascontiguousarray(np.clip(base + noise, 0, 255).astype(np.uint8))


def jpeg(height: int, width: int, seed: int) -> bytes:
    return bytes(simplejpeg.encode_jpeg(rgb(height, width, seed), 90, colorsubsampling="420"))


def progressive_jpeg(height: int, width: int, seed: int) -> bytes:
    params = [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_PROGRESSIVE, 1]
    ok, buf = cv2.imencode(".jpg", rgb(height, width, seed)[..., ::-1], params)
    if not ok:
        raise RuntimeError("cv2 could not encode a progressive JPEG")
    return buf.tobytes()


def png(height: int, width: int, seed: int) -> bytes:
    ok, buf = cv2.imencode(".png", rgb(height, width, seed))
    if not ok:
        raise RuntimeError("cv2 could not encode a PNG")
    return buf.tobytes()


def mask_png(height: int, width: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 4, (max(1, height // 8), max(1, width // 8)), dtype=np.uint8)
    mask = cv2.resize(blocks, (width, height), interpolation=cv2.INTER_NEAREST)
    ok, buf = cv2.imencode(".png", mask)
    if not ok:
        raise RuntimeError("cv2 could not encode a PNG")
    return buf.tobytes()


def size_of(i: int) -> tuple[int, int]:
    return 40 + 8 * (i % 4), 56 + 16 * (i % 3)


def image_folder(root: Path, *, progressive: bool = False) -> Path:
    """An ImageFolder tree: JPEGs, one PNG to convert and one broken file to reject."""
    for c, name in enumerate(CLASSES):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for j in range(PER_CLASS):
            i = c * PER_CLASS + j
            encode = progressive_jpeg if progressive and j % 2 else jpeg
            (folder / f"{j:03d}.jpg").write_bytes(encode(*size_of(i), seed=i))
    (root / CLASSES[0] / "extra.png").write_bytes(png(48, 40, seed=99))
    (root / CLASSES[1] / "broken.jpg").write_bytes(jpeg(40, 56, seed=98)[:300])
    return root


SAMPLES = 14
ROWS = 160  # list rows: enough captions to train a zstd dictionary on; images repeat


WORDS = (
    "red",
    "small",
    "running",
    "sitting",
    "on",
    "a",
    "wooden",
    "table",
    "near",
    "the",
    "window",
    "grass",
    "field",
    "under",
    "blue",
    "sky",
    "with",
    "two",
    "people",
)


def sample_values(i: int) -> dict[str, Any]:
    """One list-file row with every field type the list source feeds."""
    row: dict[str, Any] = {
        "path": f"img/{i % SAMPLES:02d}.jpg",
        "label": CLASSES[i % 3],
        "caption": f"sample {i}: a photo of a {CLASSES[i % 3]} "
        + "and more words " * (i % 4)
        + " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 2 + i % 9)),
        "ids": [i % 5, (i * 7) % 11],
        "boxes": [[1.0 + i, 2.0, 10.5, 12.0 + i]] * (i % 3),
        "meta": {"index": i, "tags": ["a", "b"][: i % 3], "ok": i % 2 == 0},
        "mask": f"masks/{i % SAMPLES:02d}.png",
    }
    if i % 2:
        row["note"] = f"note {i}"
    return row


FIELDS: list[dict[str, Any]] = [
    {"name": "jpg", "type": "jpeg", "column": "path"},
    {"name": "cls", "type": "class", "column": "label"},
    {"name": "txt.zst", "type": "text", "column": "caption",
     "zstd": {"level": 9, "dictionary": True}},
    {"name": "ids.json", "type": "class_ids", "column": "ids"},
    {"name": "boxes.npy", "type": "ndarray", "dtype": "<f4", "shape": [None, 4],
     "geometry": "boxes", "column": "boxes"},
    {"name": "meta.json.zst", "type": "json", "column": "meta", "zstd": {"level": 3}},
    {"name": "seg.png", "type": "png", "geometry": "mask", "column": "mask"},
    {"name": "note.txt", "type": "text", "optional": True, "column": "note"},
]  # fmt: skip


def list_jsonl(root: Path) -> tuple[Path, Path]:
    """A JSONL list file of every field type, its image and mask files, and its schema."""
    root.mkdir(parents=True, exist_ok=True)
    rows = [sample_values(i) for i in range(ROWS)]
    for i, row in enumerate(rows[:SAMPLES]):
        for name, data in (
            (row["path"], jpeg(*size_of(i), seed=i)),
            (row["mask"], mask_png(*size_of(i), seed=i)),
        ):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
    listing = root / "train.jsonl"
    listing.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    schema = root / "schema.json"
    schema.write_text(json.dumps({"fields": FIELDS}), encoding="utf-8")
    return listing, schema


def list_csv(root: Path) -> Path:
    """A CSV list file: path and label only, the image files beside it."""
    root.mkdir(parents=True, exist_ok=True)
    lines = ["path,label"]
    for i in range(SAMPLES):
        (root / f"{i:02d}.jpg").write_bytes(jpeg(*size_of(i), seed=100 + i))
        lines.append(f"{i:02d}.jpg,{CLASSES[i % 3]}")
    listing = root / "train.csv"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    tar.addfile(info, io.BytesIO(data))


def wds_tars(root: Path) -> Path:
    """Two webdataset tars: image, class number, caption and JSON members per sample."""
    root.mkdir(parents=True, exist_ok=True)
    for t in range(2):
        with tarfile.open(root / f"part-{t:06d}.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
            for j in range(7):
                i = t * 7 + j
                key = f"s{i:04d}"
                _add(tar, f"{key}.jpg", jpeg(*size_of(i), seed=200 + i))
                _add(tar, f"{key}.cls", str(i % 3).encode())
                _add(tar, f"{key}.txt", f"caption {i}".encode())
                _add(tar, f"{key}.json", json.dumps({"i": i, "even": i % 2 == 0}).encode())
    return root


def parquet_file(root: Path) -> Path:
    """A Parquet file laid out as Hugging Face datasets are: an image struct, a label, a caption,
    a list of integers and a float."""
    import pyarrow as pa  # noqa: PLC0415 -- optional: pyarrow
    import pyarrow.parquet as pq  # noqa: PLC0415 -- optional: pyarrow

    root.mkdir(parents=True, exist_ok=True)
    images = [
        {"bytes": jpeg(*size_of(i), seed=300 + i), "path": f"{i}.jpg"} for i in range(SAMPLES)
    ]
    table = pa.table(
        {
            "image": images,
            "label": [i % 3 for i in range(SAMPLES)],
            "text": [f"row {i} " * (1 + i % 3) for i in range(SAMPLES)],
            "tags": [[i % 4, i % 6] for i in range(SAMPLES)],
            "score": [i / 7 for i in range(SAMPLES)],
        }
    )
    path = root / "train.parquet"
    pq.write_table(table, path, row_group_size=5)
    return path


def coco_files(root: Path) -> tuple[Path, Path]:
    """A COCO instances file with boxes and polygons over four categories, and its images."""
    images_dir = root / "val2017"
    images_dir.mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for i in range(10):
        height, width = size_of(i)
        name = f"{i:012d}.jpg"
        (images_dir / name).write_bytes(jpeg(height, width, seed=400 + i))
        images.append({"id": 1000 + i, "file_name": name, "height": height, "width": width})
        for a in range(i % 3):
            x, y, w, h = 2 + a * 5, 3 + a * 4, 12, 10
            annotations.append(
                {
                    "id": 10 * i + a,
                    "image_id": 1000 + i,
                    "category_id": [1, 3, 7, 9][(i + a) % 4],
                    "bbox": [x, y, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                    "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]],
                }
            )
    categories = [{"id": c, "name": n} for c, n in ((1, "a"), (3, "b"), (7, "c"), (9, "d"))]
    listing = root / "annotations" / "instances_val2017.json"
    listing.parent.mkdir(parents=True, exist_ok=True)
    document = {"images": images, "annotations": annotations, "categories": categories}
    listing.write_text(json.dumps(document), encoding="utf-8")
    return listing, images_dir


Maker = Callable[[Path], Any]
