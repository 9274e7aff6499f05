"""Samples whose fields do not fit the schema: each rejected into rejects.jsonl with its field
and reason, the other samples kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.formats import read_manifest

from tests.compiler._fields import mask_png, read_fields, sample_values, write_files, write_jsonl
from tests.compiler._helpers import QUIET

FIELDS: list[dict[str, Any]] = [
    {"name": "jpg", "type": "jpeg", "column": "path"},
    {"name": "cls", "type": "class", "column": "label", "classes": ["cat", "dog", "owl"]},
    {"name": "txt", "type": "text", "column": "caption"},
    {"name": "boxes.npy", "type": "ndarray", "dtype": "<f4", "shape": [None, 4],
     "geometry": "boxes", "column": "boxes"},
    {"name": "seg.png", "type": "png", "geometry": "mask", "column": "mask"},
    {"name": "note.txt", "type": "text", "optional": True, "column": "note"},
]  # fmt: skip
SCHEMA = parse_build_schema(FIELDS, "test schema")

EXPECTED = [  # (sample, field, reason)
    (1, "boxes.npy", "array of shape (1, 3), expected (N, 4)"),
    (2, "cls", "the class is not an integer: 'fish'"),
    (3, "seg.png", "mask of 10x12 pixels, its image is 40x24"),
    (4, "txt", "missing (a required field)"),
    (6, None, "cannot read: No such file or directory"),
    (7, "seg.png", "masks/07.png: cannot read: No such file or directory"),
    (8, "boxes.npy", "boxes hold a value that is not finite"),
    (9, "txt", "text is not valid Unicode"),
]


def hostile_list(src: Path) -> tuple[Path, list[dict[str, Any]]]:
    samples = [sample_values(i) for i in range(10)]
    write_files(src, samples)
    for s in samples:
        s["label"] = ["cat", "dog", "owl"][s["label"]]
    samples[1]["boxes"] = [[1, 2, 3]]
    samples[2]["label"] = "fish"
    (src / samples[3]["mask"]).write_bytes(mask_png(12, 10, seed=3))
    del samples[4]["caption"]
    (src / samples[6]["path"]).unlink()
    (src / samples[7]["mask"]).unlink()
    samples[8]["boxes"] = [[0, 0, float("nan"), 1]]
    samples[9]["caption"] = "a lone surrogate \udc80"  # JSON can say it; UTF-8 cannot
    return write_jsonl(src / "list.jsonl", samples), samples


@pytest.mark.parametrize("workers", [1, 2])
def test_field_rejects_name_the_field(tmp_path: Path, workers: int) -> None:
    listing, samples = hostile_list(tmp_path / "src")
    out = tmp_path / "out"
    options = BuildOptions(schema=SCHEMA, workers=workers, shard_size=2000, **QUIET)
    summary = build(listing, out, options)
    lines = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    expected = []
    for i, field, reason in EXPECTED:
        line = {"path": samples[i]["path"], "reason": reason}
        expected.append(line if field is None else {**line, "field": field})
    assert [{**line, "reason": line["reason"][: len(e["reason"])]} for line, e in
            zip(lines, expected, strict=True)] == expected  # fmt: skip
    assert list(lines[0]) == ["path", "field", "reason"]
    assert (summary.samples, summary.rejected) == (2, len(EXPECTED))
    kept = read_fields(out)
    assert [k["source"] for k in kept] == [samples[0]["path"], samples[5]["path"]]
    assert [k["label"] for k in kept] == [0, 2]
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.classes == ("cat", "dog", "owl")
    assert manifest.stats["rejected"] == len(EXPECTED)


def test_strict_stops_at_a_field_reject(tmp_path: Path) -> None:
    listing, _ = hostile_list(tmp_path / "src")
    options = BuildOptions(schema=SCHEMA, workers=1, strict=True, **QUIET)
    message = r"img/01\.jpg: field 'boxes\.npy': array of shape \(1, 3\), expected \(N, 4\)"
    with pytest.raises(BuildError, match=message):
        build(listing, tmp_path / "out", options)
