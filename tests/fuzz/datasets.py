"""The real datasets that file cases mutate, and a one-sample dataset around a JPEG case.

`build_templates(root)` builds them with `fastpack.compiler.build`: `v1` (image + class, three
shards, a view `half` beside it) and `v2` (eight typed fields, one optional). A worker copies a
template before mutating one of its files. `write_one_sample(root, jpeg, template)` writes a
dataset of one sample whose image is the case's bytes as they are: tar shard, index and manifest
through `fastpack.formats`, as a build writes them, but without the build's image policy (a
reader must survive whatever bytes a shard holds).
"""

from __future__ import annotations

import hashlib
import io
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.build_schema import read_build_schema
from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    IndexPart,
    IndexWriter,
    Manifest,
    read_manifest,
    write_manifest,
)
from fastpack.formats.checksum import crc32c_extend
from fastpack.formats.layout import sample_key
from fastpack.formats.schema import FileInfo
from fastpack.formats.string_table import pack_strings
from fastpack.formats.tar_shard import TarShardWriter

from fastpack.view_build import build_views, save_views
from tests.compiler._fields import sample_values, write_files, write_jsonl, write_schema
from tests.conftest import jpeg_bytes

TEMPLATES = ("v1", "v2")
VIEW_NAME = "half"


def build_templates(root: Path) -> dict[str, Path]:
    """Build every template under `root` (a few hundred milliseconds); name -> dataset."""
    root.mkdir(parents=True, exist_ok=True)
    source = root / "v1-src"
    for i in range(9):
        path = source / f"class_{i % 3}" / f"{i}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg_bytes(24 + 8 * (i % 4), 32 + 8 * (i % 3), seed=i))
    quiet = BuildOptions(workers=1, shard_size=6_000, progress=False)
    build(source, root / "v1", quiet)
    save_views(root / "v1", build_views(root / "v1", VIEW_NAME, fraction=0.5, seed=1))
    samples = [sample_values(i) for i in range(4)]
    fields_source = root / "v2-src"
    write_files(fields_source, samples)
    listing = write_jsonl(fields_source / "list.jsonl", samples)
    schema = read_build_schema(write_schema(root / "schema.json"))
    build(listing, root / "v2", replace(quiet, schema=schema, shard_size=1 << 20))
    return {"v1": root / "v1", "v2": root / "v2"}


def write_one_sample(root: Path, jpeg: bytes, template: Manifest) -> str:
    """Write a dataset of one sample (image `jpeg`, class 0) at `root`, with `template`'s (a v1
    manifest's) classes and build record; returns the sample's key."""
    key = sample_key(0, template.key_width)
    buffer = io.BytesIO()
    jpg, cls = TarShardWriter(buffer).add_sample(key, [("jpg", jpeg), ("cls", b"0")])
    shard_info = template.shards[0]
    shard = buffer.getvalue()
    (root / shard_info.name).parent.mkdir(parents=True, exist_ok=True)
    (root / shard_info.name).write_bytes(shard)
    key_blob, key_offsets = pack_strings([key])
    source_blob, source_offsets = pack_strings(["case.jpg"])
    part = IndexPart(
        shard=0,
        labels=np.zeros(1, "<i8"),
        key_blob=key_blob,
        key_offsets=key_offsets,
        source_blob=source_blob,
        source_offsets=source_offsets,
        offsets={
            "jpg": np.array([jpg.data_offset], "<u8"),
            "cls": np.array([cls.data_offset], "<u8"),
        },
        sizes={"jpg": np.array([jpg.size], "<u8"), "cls": np.array([cls.size], "<u8")},
        crc32={
            "jpg": np.array([zlib.crc32(jpeg)], "<u4"),
            "cls": np.array([zlib.crc32(b"0")], "<u4"),
        },
    )
    with IndexWriter(
        path=root / INDEX_NAME,
        num_samples=1,
        num_shards=1,
        fields=("jpg", "cls"),
        key_blob_size=len(key_blob),
        source_blob_size=len(source_blob),
    ) as writer:
        writer.append(part)
    index = (root / INDEX_NAME).read_bytes()
    manifest = replace(
        template,
        num_samples=1,
        shards=(
            replace(
                shard_info,
                samples=1,
                bytes=len(shard),
                sha256=hashlib.sha256(shard).hexdigest(),
                crc32c=None if shard_info.crc32c is None else crc32c_extend(0, shard),
            ),
        ),
        index=FileInfo(name=INDEX_NAME, bytes=len(index), sha256=hashlib.sha256(index).hexdigest()),
        stats={},
    )
    write_manifest(root / MANIFEST_NAME, manifest)
    return key


def template_manifest(root: Path) -> Manifest:
    return read_manifest(root / MANIFEST_NAME)
