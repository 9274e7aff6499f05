"""zstd-compressed fields with a dictionary trained by the build: the dictionary file, its
checksum in the manifest, members that decompress only with it, determinism and resume."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import zstandard
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.formats import DatasetFiles, read_manifest

from tests.compiler._fields import read_fields
from tests.compiler._helpers import QUIET, tree_bytes
from tests.conftest import jpeg_bytes

SAMPLES = 40
WORDS = [
    "a", "photo", "of", "the", "red", "cat", "sitting", "on", "a", "wooden", "table", "beside",
    "a", "window", "in", "the", "evening",
]  # fmt: skip
SCHEMA = parse_build_schema(
    [
        {"name": "jpg", "type": "jpeg", "column": "path"},
        {"name": "txt.zst", "type": "text", "column": "caption",
         "zstd": {"level": 7, "dictionary": True}},
        {"name": "meta.json.zst", "type": "json", "column": "meta", "zstd": {"level": 3}},
    ],
    "test schema",
)  # fmt: skip


def caption(i: int) -> str:
    return " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 40)) + f" (#{i})"


def captions_list(src: Path, missing: int | None = None) -> Path:
    src.mkdir(parents=True)
    image = jpeg_bytes(16, 16)
    lines = []
    for i in range(SAMPLES):
        (src / f"{i}.jpg").write_bytes(image)
        item: dict[str, Any] = {"path": f"{i}.jpg", "meta": {"i": i, "words": WORDS[: i % 5]}}
        if i != missing:
            item["caption"] = caption(i)
        lines.append(json.dumps(item))
    (src / "list.jsonl").write_text("\n".join(lines) + "\n")
    return src / "list.jsonl"


def test_trained_dictionary(tmp_path: Path) -> None:
    listing = captions_list(tmp_path / "src")
    out = tmp_path / "out"
    build(listing, out, BuildOptions(schema=SCHEMA, dictionary_size=2048, workers=1, **QUIET))
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.version == 2
    assert manifest.schema.label_field is None
    assert manifest.build["dictionaries"] == {"txt.zst": "trained"}
    assert manifest.build["dictionary_size"] == 2048
    spec = manifest.schema["txt.zst"]
    assert spec.zstd is not None
    assert spec.zstd.level == 7
    d = spec.zstd.dictionary
    assert d is not None
    assert d.name == "dicts/txt.zst.zdict"
    data = (out / d.name).read_bytes()
    assert (d.bytes, d.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert len(data) <= 2048
    meta_zstd = manifest.schema["meta.json.zst"].zstd
    assert meta_zstd is not None
    assert meta_zstd.dictionary is None

    read = read_fields(out)
    assert [r["txt.zst"] for r in read] == [caption(i) for i in range(SAMPLES)]
    assert [r["meta.json.zst"] for r in read] == [
        {"i": i, "words": WORDS[: i % 5]} for i in range(SAMPLES)
    ]
    assert [r["label"] for r in read] == [-1] * SAMPLES

    files = DatasetFiles(out)
    shard = files.shard_path(0).read_bytes()
    _, offset, size = files.index.locate(0, "txt.zst", len(shard))
    member = shard[offset : offset + size]
    with_dictionary = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(data))
    assert with_dictionary.decompress(member).decode() == caption(0)
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(member)


def test_dictionary_builds_are_deterministic_and_resume(tmp_path: Path) -> None:
    listing = captions_list(tmp_path / "src", missing=25)
    shaping = BuildOptions(schema=SCHEMA, shard_size=4000, shuffle_seed=3, **QUIET)
    clean = tmp_path / "clean"
    build(listing, clean, replace(shaping, workers=2))
    assert "dicts/txt.zst.zdict" in tree_bytes(clean)

    out = tmp_path / "out"
    with pytest.raises(BuildError, match=r"25\.jpg: field 'txt\.zst': missing"):
        build(listing, out, replace(shaping, workers=1, strict=True))
    dictionary = out / "dicts/txt.zst.zdict"
    inode = dictionary.stat().st_ino
    build(listing, out, replace(shaping, workers=1, resume=True))
    assert dictionary.stat().st_ino == inode  # trained once, reused by the resume
    assert tree_bytes(out) == tree_bytes(clean)
