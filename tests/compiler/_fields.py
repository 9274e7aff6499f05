"""Multi-field sources for the compiler tests: images with masks, boxes, captions and more, as a
CSV or JSONL list file, with the schema file that describes them; and a reader of every field of
a built dataset."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from fastpack.formats import ABSENT, DatasetFiles

from tests.conftest import jpeg_bytes

SCHEMA: list[dict[str, Any]] = [
    {"name": "jpg", "type": "jpeg", "column": "path"},
    {"name": "cls", "type": "class", "column": "label"},
    {"name": "txt", "type": "text", "column": "caption"},
    {"name": "ids.json", "type": "class_ids", "column": "ids"},
    {"name": "boxes.npy", "type": "ndarray", "dtype": "<f4", "shape": [None, 4],
     "geometry": "boxes", "column": "boxes"},
    {"name": "meta.json", "type": "json", "column": "meta"},
    {"name": "seg.png", "type": "png", "geometry": "mask", "column": "mask"},
    {"name": "note.txt", "type": "text", "optional": True, "column": "note"},
]  # fmt: skip


def mask_png(height: int, width: int, seed: int) -> bytes:
    """A gray PNG of class indices 0..4 in blocks."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 5, (max(1, height // 4), max(1, width // 4)), dtype=np.uint8)
    mask = cv2.resize(blocks, (width, height), interpolation=cv2.INTER_NEAREST)
    ok, buf = cv2.imencode(".png", mask)
    if not ok:
        raise RuntimeError("cv2 could not encode a PNG")
    return buf.tobytes()


def sample_values(i: int) -> dict[str, Any]:
    """The fields of sample `i` as a source gives them (the image and mask are files)."""
    height, width = 24 + 4 * (i % 3), 32 + 8 * (i % 2)
    values: dict[str, Any] = {
        "path": f"img/{i:02d}.jpg",
        "label": i % 3,
        "caption": f"sample {i}: a photo of thing {i % 3} " + "word " * (i % 4),
        "ids": [i % 5, (i * 7) % 11],
        "boxes": [[1.0, 2.0, 10.5, 12.0]] * (i % 3),
        "meta": {"index": i, "tags": ["a", "b"][: i % 3], "ok": i % 2 == 0},
        "mask": f"masks/{i:02d}.png",
        "size": (height, width),
    }
    if i % 2:
        values["note"] = f"note {i}"
    return values


def write_files(root: Path, samples: list[dict[str, Any]]) -> None:
    """The image and mask files of `samples` under `root`."""
    for i, s in enumerate(samples):
        height, width = s["size"]
        for name, data in ((s["path"], jpeg_bytes(height, width, seed=i)),
                           (s["mask"], mask_png(height, width, seed=i))):  # fmt: skip
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


COLUMNS = ("path", "label", "caption", "ids", "boxes", "meta", "mask", "note")


def write_csv(path: Path, samples: list[dict[str, Any]], delimiter: str = ",") -> Path:
    """The samples as a list file with a header: lists as JSON, ids space-separated."""
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, delimiter=delimiter)
        writer.writerow(COLUMNS)
        for s in samples:
            writer.writerow([
                s["path"], s["label"], s["caption"], " ".join(map(str, s["ids"])),
                json.dumps(s["boxes"]), json.dumps(s["meta"]), s["mask"], s.get("note", ""),
            ])  # fmt: skip
    return path


def write_jsonl(path: Path, samples: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as file:
        for s in samples:
            item = {k: v for k, v in s.items() if k != "size"}
            file.write(json.dumps(item) + "\n")
    return path


def write_schema(path: Path, fields: list[dict[str, Any]] = SCHEMA, **extra: Any) -> Path:
    path.write_text(json.dumps({"fields": fields, **extra}), encoding="utf-8")
    return path


def read_fields(out: Path) -> list[dict[str, Any]]:
    """Every sample of a built dataset as {field: decoded value} (absent fields left out), with
    its `source` and index `label`."""
    files = DatasetFiles(out)
    index, schema = files.index, files.manifest.schema
    shards = {i: files.shard_path(i).read_bytes() for i in range(len(files.manifest.shards))}
    samples = []
    for i in range(len(files)):
        shard = shards[int(index.shard[i])]
        values: dict[str, Any] = {"source": index.source(i), "label": int(index.label[i])}
        for name in schema.names:
            if int(index.offsets(name)[i]) == ABSENT:
                continue
            _, offset, size = index.locate(i, name, len(shard))
            values[name] = files.codec(name).decode(shard[offset : offset + size])
        samples.append(values)
    return samples
