"""Multi-field builds (format version 2) from list files: every field read back equal, absent
optional fields, masks and boxes that follow a shrunk image, determinism and resume."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.build_schema import read_build_schema
from fastpack.formats import DatasetFiles, Index, Zstd, read_manifest

from tests.compiler._fields import (
    read_fields,
    sample_values,
    write_csv,
    write_files,
    write_jsonl,
    write_schema,
)
from tests.compiler._helpers import QUIET, tree_bytes

COUNT = 6


@pytest.fixture
def samples(tmp_path: Path) -> list[dict[str, Any]]:
    values = [sample_values(i) for i in range(COUNT)]
    write_files(tmp_path / "src", values)
    return values


def options(tmp_path: Path, **extra: Any) -> BuildOptions:
    schema = read_build_schema(write_schema(tmp_path / "schema.json"))
    return BuildOptions(schema=schema, workers=1, **QUIET, **extra)


def check_equal(read: list[dict[str, Any]], samples: list[dict[str, Any]], root: Path) -> None:
    assert len(read) == len(samples)
    for got, s in zip(read, samples, strict=True):
        assert got["source"] == s["path"]
        assert got["jpg"] == (root / s["path"]).read_bytes()
        assert got["cls"] == got["label"] == s["label"]
        assert got["txt"] == s["caption"]
        np.testing.assert_array_equal(got["ids.json"], s["ids"])
        boxes = got["boxes.npy"]
        assert boxes.dtype == np.float32
        np.testing.assert_array_equal(boxes, np.array(s["boxes"], np.float32).reshape(-1, 4))
        assert got["meta.json"] == s["meta"]
        assert got["seg.png"] == (root / s["mask"]).read_bytes()
        assert got.get("note.txt") == s.get("note")


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl"])
def test_list_with_a_schema_reads_back_equal(
    tmp_path: Path, samples: list[dict[str, Any]], kind: str
) -> None:
    src = tmp_path / "src"
    listing = (
        write_jsonl(src / "list.jsonl", samples)
        if kind == "jsonl"
        else write_csv(src / f"list.{kind}", samples, "\t" if kind == "tsv" else ",")
    )
    out = tmp_path / "out"
    summary = build(listing, out, options(tmp_path, shard_size=4000))
    assert (summary.samples, summary.rejected) == (COUNT, 0)
    check_equal(read_fields(out), samples, src)
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.version == 2
    assert manifest.fields == tuple(f["name"] for f in json.loads(
        (tmp_path / "schema.json").read_text())["fields"])  # fmt: skip
    assert Index(out / "index.fpx").version == 2
    assert len(manifest.shards) > 1
    payload = sum(p.stat().st_size for p in (out / "shards").glob("*.tar"))
    assert 0 < manifest.stats["payload_bytes"] < payload
    assert manifest.build["schema"] == read_build_schema(tmp_path / "schema.json").to_json()


def test_list_without_a_schema_types_its_extra_columns(
    tmp_path: Path, samples: list[dict[str, Any]]
) -> None:
    src = tmp_path / "src"
    for s in samples:  # a key named by a member extension keeps its name and type
        s["seg.png"] = s.pop("mask")
    listing = write_jsonl(src / "list.jsonl", samples)
    out = tmp_path / "out"
    build(listing, out, BuildOptions(workers=1, **QUIET))
    schema = read_manifest(out / "fastpack.json").schema
    assert [(f.name, f.type, f.optional) for f in schema.fields] == [
        ("jpg", "jpeg", False), ("cls", "class", False), ("caption.txt", "text", False),
        ("ids.json", "class_ids", False), ("boxes.npy", "ndarray", False),
        ("meta.json", "json", False), ("seg.png", "png", False), ("note.txt", "text", True),
    ]  # fmt: skip
    for got, s in zip(read_fields(out), samples, strict=True):
        assert got["caption.txt"] == s["caption"]
        np.testing.assert_array_equal(got["ids.json"], s["ids"])
        np.testing.assert_array_equal(got["boxes.npy"], s["boxes"])  # `[]`: an empty array
        assert got["meta.json"] == s["meta"]
        assert got["seg.png"] == (src / s["seg.png"]).read_bytes()
        assert got.get("note.txt") == s.get("note")


def test_csv_without_a_schema_stores_extra_columns_as_text(tmp_path: Path) -> None:
    src = tmp_path / "src"
    values = [sample_values(i) for i in range(3)]
    write_files(src, values)
    lines = ["path,label,caption,note.json"] + [
        f'{s["path"]},{s["label"]},{s["caption"]},"{{""i"": {i}}}"' for i, s in enumerate(values)
    ]
    (src / "list.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    build(src / "list.csv", out, BuildOptions(workers=1, **QUIET))
    read = read_fields(out)
    assert [r["caption.txt"] for r in read] == [s["caption"] for s in values]
    assert [r["note.json"] for r in read] == [{"i": i} for i in range(3)]


def test_image_and_label_alone_stay_version_1(tmp_path: Path) -> None:
    src = tmp_path / "src"
    values = [sample_values(i) for i in range(3)]
    write_files(src, values)
    (src / "list.csv").write_text("".join(f"{s['path']},{s['label']}\n" for s in values))
    out = tmp_path / "out"
    build(src / "list.csv", out, BuildOptions(workers=1, **QUIET))
    text = (out / "fastpack.json").read_text()
    manifest = json.loads(text)
    assert manifest["version"] == 1
    assert "schema" not in manifest
    assert set(manifest["build"]) == {
        "source_kind", "samples_per_shard", "shard_size", "shuffle_seed", "max_side", "quality",
        "check",
    }  # fmt: skip
    assert Index(out / "index.fpx").fields == ("jpg", "cls")
    assert not (out / "dicts").exists()


def test_masks_and_boxes_follow_a_shrunk_image(
    tmp_path: Path, samples: list[dict[str, Any]]
) -> None:
    src = tmp_path / "src"
    listing = write_jsonl(src / "list.jsonl", samples)
    out = tmp_path / "out"
    build(listing, out, options(tmp_path, max_side=20))
    for got, s in zip(read_fields(out), samples, strict=True):
        height, width, _, _ = simplejpeg.decode_jpeg_header(got["jpg"])
        assert max(height, width) == 20
        mask = decode_png(got["seg.png"])
        assert mask.shape == (height, width)
        original = decode_png((src / s["mask"]).read_bytes())
        assert set(np.unique(mask)) <= set(np.unique(original))  # nearest: no new values
        scale = np.array([width / s["size"][1], height / s["size"][0]] * 2, np.float64)
        expected = (np.array(s["boxes"], np.float64).reshape(-1, 4) * scale).astype(np.float32)
        np.testing.assert_array_equal(got["boxes.npy"], expected)


def decode_png(data: bytes) -> npt.NDArray[np.uint8]:
    pixels = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert pixels is not None
    return np.asarray(pixels, np.uint8)


def test_workers_and_resume_do_not_change_a_byte(
    tmp_path: Path, samples: list[dict[str, Any]]
) -> None:
    src = tmp_path / "src"
    samples[3]["boxes"] = [[1, 2, 3]]  # a reject: a strict build stops there
    listing = write_jsonl(src / "list.jsonl", samples)
    fields = json.loads(write_schema(tmp_path / "schema.json").read_text())["fields"]
    fields[2] = {"name": "txt.zst", "type": "text", "column": "caption",
                 "zstd": {"level": 5, "dictionary": True}}  # fmt: skip
    schema = read_build_schema(write_schema(tmp_path / "schema.json", fields))
    shaping = BuildOptions(schema=schema, shard_size=1, max_side=30, shuffle_seed=1, **QUIET)
    trees = []
    for workers in (1, 2):
        build(listing, tmp_path / f"out{workers}", replace(shaping, workers=workers))
        trees.append(tree_bytes(tmp_path / f"out{workers}"))
    assert trees[0] == trees[1]
    assert "rejects.jsonl" in trees[0]
    manifest = read_manifest(tmp_path / "out1" / "fastpack.json")  # 6 captions: too few to train
    assert manifest.build["dictionaries"] == {
        "txt.zst": "too few samples to train: frames without one"
    }
    assert manifest.schema["txt.zst"].zstd == Zstd(level=5, dictionary=None)

    out = tmp_path / "resumed"
    reason = r"array of shape \(1, 3\), expected \(N, 4\)"
    with pytest.raises(BuildError, match=rf"img/03\.jpg: field 'boxes\.npy': {reason}"):
        build(listing, out, replace(shaping, workers=1, strict=True))
    assert (out / ".fastpack-build").is_dir()
    build(listing, out, replace(shaping, workers=2, resume=True))
    assert tree_bytes(out) == trees[0]


def test_resume_of_a_finished_build_compares_the_schema(
    tmp_path: Path, samples: list[dict[str, Any]]
) -> None:
    listing = write_jsonl(tmp_path / "src" / "list.jsonl", samples)
    out = tmp_path / "out"
    build(listing, out, options(tmp_path))
    before = tree_bytes(out)
    build(listing, out, replace(options(tmp_path), resume=True))  # finished: kept as it is
    assert tree_bytes(out) == before
    fields = json.loads((tmp_path / "schema.json").read_text())["fields"][:-1]
    other = read_build_schema(write_schema(tmp_path / "other.json", fields))
    with pytest.raises(BuildError, match=r"cannot resume: .*schema="):
        build(listing, out, BuildOptions(schema=other, resume=True, **QUIET))


def test_dataset_files_read_the_build(tmp_path: Path, samples: list[dict[str, Any]]) -> None:
    listing = write_csv(tmp_path / "src" / "list.csv", samples)
    out = tmp_path / "out"
    build(listing, out, options(tmp_path))
    files = DatasetFiles(out)
    present = files.index.present("note.txt")
    assert present.tolist() == ["note" in s for s in samples]
    assert files.manifest.schema["note.txt"].optional
