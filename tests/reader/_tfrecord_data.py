"""Datasets built twice from one source, as tar shards and as record (TFRecord) shards: what the
record tests compare. The multi-field source is a JSON-lines list (tests/compiler/_fields.py)
with a zstd field that has a trained dictionary, an optional field absent from every other
sample (and empty in one), masks and boxes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from fastpack.compiler import BuildOptions, build
from fastpack.compiler.build_schema import BuildSchema, parse_build_schema
from fastpack.formats import DatasetFiles

from tests.compiler._fields import SCHEMA, sample_values, write_files, write_schema


class Pair(NamedTuple):
    """One source built twice with the same options."""

    tar: Path
    records: Path


def build_pair(source: Path, root: Path, **options: Any) -> Pair:
    """`source` built into `root/tar` (tar shards) and `root/tfrecord` (record shards), with
    one worker and `options`; both split into shards the same way (checked)."""
    options = {"workers": 1, "progress": False, **options}
    pair = Pair(root / "tar", root / "tfrecord")
    build(source, pair.tar, BuildOptions(**options))
    build(source, pair.records, BuildOptions(shard_format="tfrecord", **options))
    tar, records = DatasetFiles(pair.tar).manifest, DatasetFiles(pair.records).manifest
    assert records.shard_format == "tfrecord"
    assert [s.samples for s in tar.shards] == [s.samples for s in records.shards]
    return pair


FIELDS_COUNT = 12
# _fields.SCHEMA (text, class ids, boxes, JSON, a mask, an optional note) and two zstd fields:
# a long caption with a trained dictionary, the JSON without one.
FIELDS_SCHEMA: BuildSchema = parse_build_schema(
    [
        *SCHEMA,
        {
            "name": "story.txt.zst",
            "type": "text",
            "column": "story",
            "zstd": {"level": 5, "dictionary": True},
        },
        {"name": "meta.json.zst", "type": "json", "column": "meta", "zstd": {"level": 3}},
    ],
    "record test schema",
)


def story(i: int) -> str:
    """A caption long and alike enough across samples to train a zstd dictionary on."""
    words = ["a", "red", "cat", "on", "the", "wooden", "table", "by", "a", "window", "at", "dusk"]
    return " ".join(words[(i * k) % len(words)] for k in range(1, 100)) + f" (#{i})"


def write_fields_source(root: Path, count: int = FIELDS_COUNT) -> tuple[Path, BuildSchema]:
    """A JSON-lines list of `count` samples under `root` (images and masks beside it), and the
    schema to build it with. Sample 1's optional note is present and empty."""
    samples = [sample_values(i) for i in range(count)]
    write_files(root, samples)
    samples[1]["note"] = ""
    lines = []
    for i, s in enumerate(samples):
        item = {k: v for k, v in s.items() if k != "size"}
        item["story"] = story(i)
        lines.append(json.dumps(item))
    listing = root / "list.jsonl"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_schema(root / "schema.json")  # for the record: the columns of _fields.SCHEMA
    return listing, FIELDS_SCHEMA


def build_fields_pair(root: Path, **options: Any) -> Pair:
    """The multi-field source built as tars and as records under `root`."""
    listing, schema = write_fields_source(root / "src")
    return build_pair(listing, root, schema=schema, **options)
