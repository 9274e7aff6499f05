"""One sample's members from its values: references read, cells parsed, each value checked by
its field, the field named when a value does not fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastpack.compiler.images.policy import PreparedImage, prepare_image
from fastpack.compiler.jobs.inputs import InputReader
from fastpack.compiler.jobs.sample_encoder import FieldReject, ImageOptions, SampleEncoder
from fastpack.compiler.planning.plan_store import PlanMeta
from fastpack.compiler.sources.sample_fields import FileRef, MemberRef, pack_fields
from fastpack.formats import FieldSpec, Schema, Zstd, decode_value

from tests.conftest import jpeg_bytes, png_bytes

PREPARED = prepare_image(jpeg_bytes(16, 24))
assert isinstance(PREPARED, PreparedImage)
IMAGE: PreparedImage = PREPARED
SCHEMA = Schema((
    FieldSpec(name="jpg", type="jpeg"),
    FieldSpec(name="cls", type="class"),
    FieldSpec(name="txt", type="text", optional=True),
    FieldSpec(name="raw.bin", type="raw", optional=True),
    FieldSpec(name="arr.npy", type="ndarray", optional=True),
    FieldSpec(name="ids.json.zst", type="class_ids", optional=True, zstd=Zstd(level=3)),
    FieldSpec(name="thumb.jpg", type="jpeg", optional=True),
))  # fmt: skip


def encoder(tmp_path: Path, *, text_cells: bool = False, schema: Schema = SCHEMA) -> SampleEncoder:
    (tmp_path / "blob.bin").write_bytes(b"0123456789")
    meta = PlanMeta(
        kind="test", root=str(tmp_path), containers=("blob.bin",), classes=(), num_inputs=1,
        total_size=0, samples_per_shard=1, num_shards=1, key_width=9, shuffled=False,
    )  # fmt: skip
    images = ImageOptions(max_side=None, quality=90, check="structure")
    return SampleEncoder(schema, {}, InputReader(meta), images, text_cells=text_cells)


def encode(tmp_path: Path, values: dict[str, Any], **kw: Any) -> dict[str, Any] | FieldReject:
    result = encoder(tmp_path, **kw).encode(IMAGE, 4, pack_fields(values))
    if isinstance(result, FieldReject):
        return result
    assert result.label == 4
    names = [SCHEMA.names[p] for p in result.positions]
    assert names == [n for n, _ in result.members]
    return dict(result.members)


def test_references_are_read(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("héllo", encoding="utf-8")
    members = encode(tmp_path, {"txt": FileRef("t.txt"), "raw.bin": MemberRef(0, 2, 5)})
    assert isinstance(members, dict)
    assert (members["txt"], members["raw.bin"]) == ("héllo".encode(), b"23456")
    assert members["cls"] == b"4"


def test_cells_are_parsed_by_type(tmp_path: Path) -> None:
    values = {"arr.npy": "[[1, 2], [3, 4]]", "ids.json.zst": "5 6 7"}
    members = encode(tmp_path, values, text_cells=True)
    assert isinstance(members, dict)
    spec = SCHEMA["arr.npy"]
    assert decode_value(spec, members["arr.npy"]).tolist() == [[1, 2], [3, 4]]
    assert members["ids.json.zst"].startswith(b"\x28\xb5\x2f\xfd")  # a zstd frame


@pytest.mark.parametrize(
    ("values", "field", "reason"),
    [
        ({"txt": FileRef("bad.txt")}, "txt", "text is not UTF-8 (invalid start byte at byte 2)"),
        ({"txt": FileRef("gone.txt")}, "txt", "gone.txt: cannot read: No such file"),
        ({"raw.bin": MemberRef(0, 8, 5)}, "raw.bin", "cannot read: tar member cut off"),
        ({"raw.bin": MemberRef(3, 0, 1)}, "raw.bin", "cannot read: no container 3"),
        ({"arr.npy": "[1, 2"}, "arr.npy", "not a JSON list ("),
        ({"ids.json.zst": "1 x"}, "ids.json.zst", "class id 1 is not an integer: 'x'"),
        ({"cls": True}, "cls", "the class is not an integer: True"),
        ({"cls": None}, "cls", "missing (a required field)"),
        ({"thumb.jpg": FileRef("p.png")}, None, None),  # converted: kept
        ({"thumb.jpg": FileRef("bad.txt")}, "thumb.jpg", "not a decodable image"),
    ],
)
def test_values_that_do_not_fit_name_the_field(
    tmp_path: Path, values: dict[str, Any], field: str | None, reason: str | None
) -> None:
    (tmp_path / "bad.txt").write_bytes(b"ab\xffcd")
    (tmp_path / "p.png").write_bytes(png_bytes())
    result = encode(tmp_path, values, text_cells=True)
    if field is None:
        assert isinstance(result, dict)
        return
    assert isinstance(result, FieldReject)
    assert result.field == field
    assert result.reason.startswith(str(reason)), result.reason


PLAIN = Schema((
    FieldSpec(name="jpg", type="jpeg"),
    FieldSpec(name="cls", type="class"),
    FieldSpec(name="txt", type="text", optional=True),
    FieldSpec(name="ids.json.zst", type="class_ids", zstd=Zstd(level=3)),
    FieldSpec(name="meta.json", type="json", optional=True),
))  # fmt: skip
ROWS: list[dict[str, Any]] = [
    {"txt": "a", "ids.json.zst": [1, 2], "meta.json": {"k": [1, 2.5]}},  # ready: the plan's label
    {"cls": 7, "txt": "é", "ids.json.zst": [], "meta.json": {}},  # ready: its own label
    {"ids.json.zst": [3]},  # optional members absent: field by field
    {"txt": FileRef("t.txt"), "ids.json.zst": "4 5"},  # a reference: field by field
    {"cls": None, "ids.json.zst": [1]},  # a null label: rejected
    {"txt": 3, "ids.json.zst": [1]},  # a value that does not fit
    {"ids.json.zst": [1], "meta.json": {"nan": float("nan")}},
    {"txt": "no ids"},  # a required field missing
]


@pytest.mark.parametrize("schema", [PLAIN, SCHEMA], ids=["ready", "not-ready"])
def test_a_prepared_shard_encodes_as_each_sample_alone(tmp_path: Path, schema: Schema) -> None:
    (tmp_path / "t.txt").write_bytes(b"from a file")
    alone, shard = encoder(tmp_path, schema=schema), encoder(tmp_path, schema=schema)
    rows = [{k: v for k, v in r.items() if k in schema} for r in ROWS]
    shard.prepare(rows)
    # SCHEMA's thumb.jpg goes through the image policy: no row of it is ready
    ready = [True] * 2 + [False] * 6 if schema is PLAIN else [False] * 8
    assert shard._ready == ready
    for k, row in enumerate(rows):
        assert shard.encode_row(IMAGE, 9, row, k) == alone.encode(IMAGE, 9, pack_fields(row)), k
