"""Parquet sources in the Hugging Face layout: columns to fields (by default and by a schema),
images and binary cells spilled, streaming a row group at a time, the errors, and the
end-to-end build read back."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastpack.compiler import BuildOptions, SourceError, build
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.compiler.sources import LeftOutWarning, SourceOptions, detect_kind
from fastpack.compiler.sources.parquet import source as parquet_source
from fastpack.compiler.sources.sample_fields import FileRef, MemberRef, unpack_fields
from fastpack.compiler.sources.scan import NO_CONTAINER
from fastpack.formats import encode_value

from tests.compiler._fields import read_fields
from tests.compiler.sources._scans import image_bytes, resolved, scan_all
from tests.conftest import jpeg_bytes, png_bytes

ROWS = 8
NAMES = ["cat", "dog", "bird"]
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
HF_FEATURES = {
    "image": {"_type": "Image"},
    "label": {"names": NAMES, "_type": "ClassLabel"},
    "tags": {"feature": {"names": ["a", "b", "c"], "_type": "ClassLabel"}, "_type": "Sequence"},
}


def row_values(i: int) -> dict[str, Any]:
    return {
        "image": {"bytes": jpeg_bytes(16, 20 + 2 * i, seed=i), "path": f"{i}.jpg"},
        "label": i % 3,
        "Caption Text": f"a photo {i}" if i != 3 else None,
        "tags": [i % 3, (i + 1) % 3],
        "embedding": [float(i), 0.5, -1.25],
        "meta": {"w": 20 + 2 * i, "source": "web"},
        "score": i / 4,
        "blob": bytes([i]) * (i + 1),
    }


TYPES = pa.schema(
    [
        ("image", IMAGE),
        ("label", pa.int64()),
        ("Caption Text", pa.string()),
        ("tags", pa.list_(pa.int64())),
        ("embedding", pa.list_(pa.float32())),
        ("meta", pa.struct([("w", pa.int64()), ("source", pa.string())])),
        ("score", pa.float64()),
        ("blob", pa.binary()),
    ]
)


def write_parquet(
    path: Path,
    rows: list[dict[str, Any]],
    schema: pa.Schema = TYPES,
    features: dict[str, Any] | None = HF_FEATURES,
    row_group_size: int = 3,
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if features is not None:
        metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
        schema = schema.with_metadata(metadata)
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


@pytest.fixture
def hf_file(tmp_path: Path) -> Path:
    return write_parquet(tmp_path / "data" / "train.parquet", [row_values(i) for i in range(ROWS)])


def test_default_fields_of_a_hugging_face_file(hf_file: Path, tmp_path: Path) -> None:
    assert detect_kind(hf_file, "auto") == "parquet"
    scan, rows = scan_all(hf_file, tmp_path / "work")
    schema = scan.schema
    assert schema.names == (
        "jpg",
        "cls",
        "caption_text.txt",
        "tags.json",
        "embedding.npy",
        "meta.json",
        "score.json",
        "blob.bin",
    )
    assert [schema[n].type for n in schema.names] == [
        "jpeg",
        "class",
        "text",
        "class_ids",
        "ndarray",
        "json",
        "json",
        "raw",
    ]
    assert (schema["embedding.npy"].dtype, schema["embedding.npy"].shape) == ("<f4", (None,))
    assert schema["tags.json"].classes == ("a", "b", "c")
    assert schema["caption_text.txt"].optional
    assert scan.classes == tuple(NAMES)
    assert scan.labels is None
    assert scan.containers == (str(tmp_path / "work" / "sources" / "parquet-cells"),)
    for i, row in enumerate(rows):
        expected = row_values(i)
        assert row.source.decode() == f"train.parquet:{i}"
        assert row.label == i % 3
        assert image_bytes(scan, row) == expected["image"]["bytes"]
        values = resolved(scan, row)
        assert values.get("caption_text.txt") == expected["Caption Text"]
        assert values["tags.json"] == expected["tags"]
        assert values["embedding.npy"] == expected["embedding"]
        assert values["meta.json"] == expected["meta"]
        assert values["score.json"] == expected["score"]
        assert values["blob.bin"] == expected["blob"]
        for name, value in unpack_fields(row.fields).items():
            if not isinstance(value, MemberRef):
                encode_value(schema[name], value)  # every inline value fits its field


def test_rows_stream_a_row_group_at_a_time(
    hf_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parquet_source, "BATCH_ROWS", 2)
    read: list[tuple[list[int], int]] = []
    iter_batches = pq.ParquetFile.iter_batches

    def counting(self: pq.ParquetFile, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        for batch in iter_batches(self, **kwargs):
            read.append((kwargs["row_groups"], batch.num_rows))
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counting)
    (tmp_path / "work").mkdir()
    scan = parquet_source.scan_parquet(hf_file, tmp_path / "work")
    seen = []
    for n, _ in enumerate(scan.rows):
        seen.append(len(read))
        assert sum(rows for _, rows in read) <= n + 2  # at most one batch read ahead
    assert read == [([0], 2), ([0], 1), ([1], 2), ([1], 1), ([2], 2)]  # row groups of 3, 3, 2
    assert seen == [1, 1, 2, 3, 3, 4, 5, 5]


def test_string_labels_and_path_images(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / "imgs" / f"{i}.png").parent.mkdir(exist_ok=True)
        (tmp_path / "imgs" / f"{i}.png").write_bytes(png_bytes(8, 8, seed=i))
    schema = pa.schema([("img", pa.string()), ("label", pa.string())])
    rows = [{"img": f"imgs/{i}.png", "label": ["zebra", "ant"][i % 2]} for i in range(3)]
    path = write_parquet(tmp_path / "t.parquet", rows, schema, features=None)
    scan, planned = scan_all(path, tmp_path / "work")
    assert scan.schema.names == ("jpg", "cls")
    assert [r.fields for r in planned] == [b""] * 3  # image and class only
    assert {r.container for r in planned} == {NO_CONTAINER}
    assert [image_bytes(scan, r) for r in planned] == [png_bytes(8, 8, seed=i) for i in range(3)]
    assert scan.labels is not None
    classes, lookup = scan.labels.finish()
    assert classes == ("ant", "zebra")
    assert [int(lookup[r.label]) for r in planned] == [1, 0, 1]


def test_null_images_and_path_fallback(tmp_path: Path) -> None:
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "b.jpg").write_bytes(jpeg_bytes(8, 8))
    rows: list[dict[str, Any]] = [
        {"image": {"bytes": jpeg_bytes(8, 8, seed=1), "path": "a.jpg"}},
        {"image": {"bytes": None, "path": "b.jpg"}},
        {"image": None},
    ]
    path = write_parquet(tmp_path / "t.parquet", rows, pa.schema([("image", IMAGE)]), None)
    scan, planned = scan_all(path, tmp_path / "work", SourceOptions(images_root=tmp_path / "pics"))
    assert scan.schema.names == ("jpg",)
    assert [r.label for r in planned] == [-1, -1, -1]
    assert image_bytes(scan, planned[0]) == jpeg_bytes(8, 8, seed=1)
    assert (planned[1].source, planned[1].container) == (b"b.jpg", NO_CONTAINER)
    assert image_bytes(scan, planned[1]) == jpeg_bytes(8, 8)
    assert (planned[2].size, planned[2].source) == (0, b"t.parquet:2")  # rejected: empty


def test_a_directory_of_files_in_name_order(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_parquet(data / "train-00001-of-00002.parquet", [row_values(i) for i in range(3, 5)])
    write_parquet(data / "train-00000-of-00002.parquet", [row_values(i) for i in range(3)])
    assert detect_kind(data, "auto") == "parquet"
    scan, rows = scan_all(data, tmp_path / "work")
    assert [r.source.decode() for r in rows] == [
        *(f"train-00000-of-00002.parquet:{i}" for i in range(3)),
        *(f"train-00001-of-00002.parquet:{i}" for i in range(2)),
    ]
    assert [image_bytes(scan, r) for r in rows] == [
        row_values(i)["image"]["bytes"] for i in range(5)
    ]
    write_parquet(data / "test-00000-of-00001.parquet", [row_values(0)])
    with pytest.raises(SourceError, match=r"data: holds the Parquet files of several splits"):
        scan_all(data, tmp_path / "work2")


def parquet_schema(fields: list[dict[str, Any]]) -> SourceOptions:
    return SourceOptions(schema=parse_build_schema(fields, "schema.json"))


def test_a_schema_maps_columns(hf_file: Path, tmp_path: Path) -> None:
    options = parquet_schema(
        [
            {"name": "jpg", "type": "jpeg", "column": "image"},
            {"name": "txt", "type": "text", "column": "Caption Text", "optional": True},
            {"name": "cls", "type": "class", "column": "label"},
            {"name": "blob.npy", "type": "raw", "column": "blob"},
            {
                "name": "vec.npy",
                "type": "ndarray",
                "dtype": "<f4",
                "shape": [3],
                "column": "embedding",
            },
        ]
    )
    scan, rows = scan_all(hf_file, tmp_path / "work", options)
    assert scan.schema.names == ("jpg", "txt", "cls", "blob.npy", "vec.npy")  # the schema's order
    assert scan.classes == tuple(NAMES)
    values = resolved(scan, rows[4])
    assert values == {"txt": "a photo 4", "blob.npy": bytes([4]) * 5, "vec.npy": [4.0, 0.5, -1.25]}


def test_a_json_field_of_a_string_column_is_json_text(tmp_path: Path) -> None:
    rows = [
        {"image": jpeg_bytes(8, 8), "meta": '{"a": 1}'},
        {"image": jpeg_bytes(8, 8), "meta": "not json"},
    ]
    path = write_parquet(
        tmp_path / "t.parquet",
        rows,
        pa.schema([("image", pa.binary()), ("meta", pa.string())]),
        None,
    )
    options = parquet_schema(
        [{"name": "jpg", "type": "jpeg", "column": "image"}, {"name": "meta.json", "type": "json"}]
    )
    scan, planned = scan_all(path, tmp_path / "work", options)
    spec = scan.schema["meta.json"]
    good, bad = (resolved(scan, r)["meta.json"] for r in planned)
    assert encode_value(spec, good) == b'{"a": 1}'
    with pytest.raises(ValueError, match=r"not valid JSON"):
        encode_value(spec, bad)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([{"name": "txt", "type": "text", "column": "label"}], r"schema: no jpeg field"),
        (
            [{"name": "jpg", "type": "jpeg", "column": "picture"}],
            r"train\.parquet: no column 'picture' \(for field 'jpg'\); the columns are",
        ),
        (
            [
                {"name": "jpg", "type": "jpeg", "column": "image"},
                {"name": "cls", "type": "class", "column": "embedding"},
            ],
            r"column 'embedding' \(list<element: float>\) cannot fill the class field 'cls'",
        ),
        (
            [{"name": "jpg", "type": "jpeg", "column": "label"}],
            r"column 'label' \(int64\) cannot fill the jpeg field 'jpg'",
        ),
    ],
)
def test_schema_errors(
    hf_file: Path, tmp_path: Path, fields: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(SourceError, match=message):
        scan_all(hf_file, tmp_path / "work", parquet_schema(fields))


def test_errors_name_the_file_and_row(tmp_path: Path) -> None:
    schema = pa.schema([("image", pa.binary()), ("label", pa.string())])
    rows: list[dict[str, Any]] = [{"image": b"x", "label": "a"}, {"image": b"y", "label": " "}]
    path = write_parquet(tmp_path / "t.parquet", rows, schema, None)
    with pytest.raises(
        SourceError,
        match=r"t\.parquet: row 1: the label \(column 'label'\) is "
        "blank",
    ):
        scan_all(path, tmp_path / "work")
    rows = [{"image": b"x", "label": None}]
    path = write_parquet(tmp_path / "u.parquet", rows, schema, None)
    with pytest.raises(SourceError, match=r"u\.parquet: row 0: the label .* is null"):
        scan_all(path, tmp_path / "work")


def test_files_that_disagree_or_are_not_parquet(tmp_path: Path) -> None:
    write_parquet(tmp_path / "d/a.parquet", [row_values(0)])
    other = TYPES.set(TYPES.get_field_index("label"), pa.field("label", pa.string()))
    write_parquet(tmp_path / "d/b.parquet", [{**row_values(1), "label": "x"}], other)
    with pytest.raises(SourceError, match=r"b\.parquet: column 'label' is string, but int64 in"):
        scan_all(tmp_path / "d", tmp_path / "work")
    (tmp_path / "e").mkdir()
    (tmp_path / "e/a.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(SourceError, match=r"a\.parquet: not a readable Parquet file"):
        scan_all(tmp_path / "e", tmp_path / "work", kind="parquet")


def test_no_image_column(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "t.parquet", [{"text": "hi"}], pa.schema([("text", pa.string())]), None
    )
    with pytest.raises(
        SourceError,
        match=r"t\.parquet: no image column: .* the columns are "
        r"text \(string\)",
    ):
        scan_all(path, tmp_path / "work")


def test_columns_that_clash_or_hold_nested_bytes(tmp_path: Path) -> None:
    two = pa.schema([("image", pa.binary()), ("A b", pa.string()), ("a-b", pa.string())])
    path = write_parquet(
        tmp_path / "t.parquet", [{"image": b"x", "A b": "1", "a-b": "2"}], two, None
    )
    with pytest.raises(SourceError, match=r"columns 'A b' and 'a-b' both make field 'a_b\.txt'"):
        scan_all(path, tmp_path / "work")
    nested = pa.schema([("image", pa.binary()), ("thumbs", pa.list_(pa.binary()))])
    path = write_parquet(tmp_path / "u.parquet", [{"image": b"x", "thumbs": [b"a"]}], nested, None)
    with pytest.warns(LeftOutWarning, match=r"column 'thumbs' .* holds bytes inside lists"):
        scan, _ = scan_all(path, tmp_path / "work")
    assert scan.schema.names == ("jpg",)


def test_detection(tmp_path: Path) -> None:
    write_parquet(tmp_path / "d/a.parquet", [row_values(0)])
    (tmp_path / "d/b.tar").write_bytes(b"")
    with pytest.raises(SourceError, match=r"holds both \.tar and \.parquet files"):
        detect_kind(tmp_path / "d", "auto")
    assert detect_kind(tmp_path / "d", "parquet") == "parquet"
    with pytest.raises(SourceError, match=r"a wds source cannot be a \.parquet file"):
        detect_kind(tmp_path / "d/a.parquet", "wds")


def test_without_pyarrow(hf_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(
        SourceError,
        match=r"reading Parquet needs pyarrow: pip install "
        r"'fastpack\[parquet\]'",
    ) as caught:
        scan_all(hf_file, tmp_path / "work", kind="parquet")
    assert isinstance(caught.value, ImportError)


def test_file_images_are_file_refs_in_other_fields(tmp_path: Path) -> None:
    (tmp_path / "m.png").write_bytes(png_bytes(8, 8))
    schema = pa.schema([("image", pa.binary()), ("mask", pa.string())])
    path = write_parquet(
        tmp_path / "t.parquet", [{"image": jpeg_bytes(8, 8), "mask": "m.png"}], schema, None
    )
    options = parquet_schema(
        [
            {"name": "jpg", "type": "jpeg", "column": "image"},
            {"name": "seg.png", "type": "png", "geometry": "mask", "column": "mask"},
        ]
    )
    scan, rows = scan_all(path, tmp_path / "work", options)
    assert unpack_fields(rows[0].fields) == {"seg.png": FileRef("m.png")}
    assert resolved(scan, rows[0]) == {"seg.png": png_bytes(8, 8)}


# --- end to end ------------------------------------------------------------------------------


def test_build_reads_back_every_column(hf_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(hf_file, out, BuildOptions(workers=1, progress=False))
    stored = read_fields(out)
    assert len(stored) == ROWS
    for i, got in enumerate(stored):
        expected = row_values(i)
        assert got["jpg"] == expected["image"]["bytes"]
        assert got["label"] == got["cls"] == i % 3
        assert got.get("caption_text.txt") == expected["Caption Text"]
        assert got["tags.json"].tolist() == expected["tags"]
        np.testing.assert_array_equal(got["embedding.npy"], np.array(expected["embedding"], "<f4"))
        assert got["meta.json"] == expected["meta"]
        assert got["score.json"] == expected["score"]
        assert got["blob.bin"] == expected["blob"]
