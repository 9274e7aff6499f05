"""Small, fixed inputs for the format tests: a shard of three samples and its index."""

from __future__ import annotations

import io
import zlib
from pathlib import Path

import numpy as np
from fastpack.formats import IndexPart, IndexWriter
from fastpack.formats.layout import sample_key
from fastpack.formats.string_table import pack_strings
from fastpack.formats.tar_shard import MemberLocation, TarShardWriter
from fastpack.formats.wds_index import format_wds_index

FIELDS = ("jpg", "cls")
PAYLOADS = (b"\xff\xd8first\xff\xd9", b"\xff\xd8" + bytes(range(256)) * 3 + b"\xff\xd9", b"x" * 512)
LABELS = (0, 7, -1)
SOURCES = ("cats/a.jpg", "dogs/é b.jpg", "x.jpg")


def write_shard() -> tuple[bytes, list[list[MemberLocation]]]:
    buf = io.BytesIO()
    writer = TarShardWriter(buf)
    locations = [
        writer.add_sample(sample_key(i, 9), [("jpg", data), ("cls", str(label).encode())])
        for i, (data, label) in enumerate(zip(PAYLOADS, LABELS, strict=True))
    ]
    writer.finish()
    return buf.getvalue(), locations


def index_part(locations: list[list[MemberLocation]], shard: int = 0) -> IndexPart:
    key_blob, key_offsets = pack_strings(sample_key(i, 9) for i in range(len(locations)))
    source_blob, source_offsets = pack_strings(SOURCES)
    payloads = {"jpg": PAYLOADS, "cls": tuple(str(v).encode() for v in LABELS)}
    return IndexPart(
        shard=shard,
        labels=np.array(LABELS, dtype="<i8"),
        key_blob=key_blob,
        key_offsets=key_offsets,
        source_blob=source_blob,
        source_offsets=source_offsets,
        offsets={
            f: np.array([m[j].data_offset for m in locations], "<u8") for j, f in enumerate(FIELDS)
        },
        sizes={f: np.array([m[j].size for m in locations], "<u8") for j, f in enumerate(FIELDS)},
        crc32={f: np.array([zlib.crc32(p) for p in payloads[f]], "<u4") for f in FIELDS},
    )


def write_index(path: Path, locations: list[list[MemberLocation]]) -> IndexPart:
    part = index_part(locations)
    with IndexWriter(
        path=path,
        num_samples=part.num_samples,
        num_shards=1,
        fields=FIELDS,
        key_blob_size=len(part.key_blob),
        source_blob_size=len(part.source_blob),
    ) as writer:
        writer.append(part)
    return part


def write_dataset_files(root: Path) -> None:
    """shards/000000.tar, its .idx and index.fpx (no manifest)."""
    data, locations = write_shard()
    (root / "shards").mkdir(parents=True, exist_ok=True)
    (root / "shards" / "000000.tar").write_bytes(data)
    (root / "shards" / "000000.idx").write_text(format_wds_index(locations))
    write_index(root / "index.fpx", locations)
