"""webdataset sources with more than an image and a class: every member kept as a field, typed by
its extension; the fields found in the first shard or named by a schema; members left out with a
warning; and the end-to-end build read back."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import webdataset
from fastpack.compiler import BuildOptions, SourceError, build
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.compiler.sources import LeftOutWarning, SourceOptions, open_source
from fastpack.compiler.sources.wds import source as wds
from fastpack.formats import FieldSpec, Zstd, decode_value
from fastpack.formats.schema import V1_SCHEMA

from tests.compiler._fields import read_fields
from tests.compiler.sources._scans import image_bytes, resolved, scan_all
from tests.compiler.sources.test_sources import write_tar
from tests.conftest import jpeg_bytes, png_bytes

DEPTH = np.arange(6, dtype="<f4").reshape(3, 2)


def sample(i: int, *, txt: bool = True) -> dict[str, Any]:
    """A sample as webdataset's TarWriter takes it: its encoders make the member bytes."""
    values: dict[str, Any] = {
        "__key__": f"s{i:03d}",
        "jpg": jpeg_bytes(16 + 4 * (i % 2), 24, seed=i),
        "cls": ["cat", "dog"][i % 2],
        "json": {"index": i, "tags": ["a"] * (i % 3)},
        "depth.npy": DEPTH + i,
        "seg.png": png_bytes(16 + 4 * (i % 2), 24, seed=i),
        "xyz": bytes([i]) * 5,
    }
    if txt:
        values["txt"] = f"caption {i}"
    return values


def write_shard(path: Path, samples: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with webdataset.TarWriter(str(path)) as writer:
        for s in samples:
            writer.write(s)
    return path


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    """Two shards of three samples; sample 1 has no txt member."""
    root = tmp_path / "tars"
    write_shard(root / "a-000.tar", [sample(i, txt=i != 1) for i in range(3)])
    write_shard(root / "a-001.tar", [sample(i) for i in range(3, 6)])
    return root


def check_values(spec: FieldSpec, data: bytes, expected: Any) -> None:
    got = decode_value(spec, data)
    if isinstance(expected, np.ndarray):
        np.testing.assert_array_equal(got, expected)
    else:
        assert got == expected


def test_fields_found_in_the_first_shard(shards: Path, tmp_path: Path) -> None:
    scan, rows = scan_all(shards, tmp_path / "work")
    schema = scan.schema
    assert schema.names == ("jpg", "cls", "depth.npy", "json", "seg.png", "txt", "xyz")
    assert [schema[n].type for n in schema.names] == [
        "jpeg",
        "class",
        "ndarray",
        "json",
        "png",
        "text",
        "raw",
    ]
    assert [n for n in schema.names if schema[n].optional] == ["txt"]
    assert schema["depth.npy"].dtype is None
    assert schema["depth.npy"].shape is None
    assert scan.labels is not None
    classes, lookup = scan.labels.finish()
    assert classes == ("cat", "dog")
    assert [int(lookup[r.label]) for r in rows] == [0, 1, 0, 1, 0, 1]
    for i, row in enumerate(rows):
        s = sample(i, txt=i != 1)
        assert row.source.decode() == f"a-00{i // 3}.tar:{s['__key__']}"
        assert image_bytes(scan, row) == s["jpg"]
        values = resolved(scan, row)
        assert sorted(values) == sorted(n for n in schema.names[2:] if n in s)
        check_values(schema["depth.npy"], values["depth.npy"], s["depth.npy"])
        check_values(schema["json"], values["json"], s["json"])
        assert values["seg.png"] == s["seg.png"]
        assert values["xyz"] == s["xyz"]
        if "txt" in s:
            check_values(schema["txt"], values["txt"], s["txt"])


def test_image_and_class_only_is_version_1_without_field_bytes(tmp_path: Path) -> None:
    write_shard(
        tmp_path / "t/0.tar",
        [{"__key__": f"k{i}", "jpg": jpeg_bytes(8, 8, seed=i), "cls": i} for i in range(3)],
    )
    scan, rows = scan_all(tmp_path / "t", tmp_path / "work")
    assert scan.schema == V1_SCHEMA
    assert [r.fields for r in rows] == [b""] * 3


def test_samples_without_cls_make_an_unlabeled_dataset(tmp_path: Path) -> None:
    write_shard(
        tmp_path / "t/0.tar",
        [{"__key__": f"k{i}", "png": png_bytes(8, 8, seed=i), "txt": f"t{i}"} for i in range(2)],
    )
    scan, rows = scan_all(tmp_path / "t", tmp_path / "work")
    assert scan.schema.names == ("jpg", "txt")
    assert scan.schema.label_field is None
    assert scan.labels is None
    assert scan.classes == ()
    assert [r.label for r in rows] == [-1, -1]
    assert [image_bytes(scan, r) for r in rows] == [png_bytes(8, 8, seed=i) for i in range(2)]


def test_another_class_extension_is_the_label_without_cls(tmp_path: Path) -> None:
    write_shard(
        tmp_path / "t/0.tar", [{"__key__": "k", "jpg": jpeg_bytes(8, 8), "id": 4, "index": 2}]
    )
    scan, rows = scan_all(tmp_path / "t", tmp_path / "work")
    assert scan.schema.names == ("jpg", "id", "index")
    assert scan.schema.label_field == "id"
    assert scan.labels is not None
    assert scan.labels.finish()[1][rows[0].label] == 4
    assert resolved(scan, rows[0]) == {"index": b"2"}


def schema(fields: list[dict[str, Any]], unnamed: str = "raw") -> SourceOptions:
    return SourceOptions(schema=parse_build_schema({"fields": fields, "unnamed": unnamed}, "s"))


NAMED: list[dict[str, Any]] = [
    {"name": "jpg", "type": "jpeg"},
    {"name": "cls", "type": "class"},
    {"name": "txt.zst", "type": "text", "optional": True, "zstd": {"level": 5}},
    {"name": "depth.npy", "type": "ndarray", "dtype": "<f4", "shape": [3, 2]},
]


def test_a_schema_names_fields_and_keeps_the_rest_as_raw(shards: Path, tmp_path: Path) -> None:
    scan, rows = scan_all(shards, tmp_path / "work", schema(NAMED))
    assert scan.schema.names == ("jpg", "cls", "txt.zst", "depth.npy", "json", "seg.png", "xyz")
    assert scan.schema["txt.zst"].zstd == Zstd(level=5)
    assert [scan.schema[n].type for n in ("json", "seg.png", "xyz")] == ["raw"] * 3
    values = resolved(scan, rows[0])
    assert values["txt.zst"] == b"caption 0"  # the `txt` member; its shard job compresses it
    assert values["json"] == json.dumps(sample(0)["json"]).encode()
    assert "txt.zst" not in resolved(scan, rows[1])


def test_a_schema_that_drops_unnamed_members(shards: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scan, rows = scan_all(shards, tmp_path / "work", schema(NAMED, unnamed="drop"))
    assert scan.schema.names == ("jpg", "cls", "txt.zst", "depth.npy")
    assert sorted(resolved(scan, rows[0])) == ["depth.npy", "txt.zst"]


def test_the_image_field_takes_its_own_member_first(tmp_path: Path) -> None:
    png = png_bytes(8, 8)
    write_shard(tmp_path / "t/0.tar", [{"__key__": "k", "jpg": jpeg_bytes(8, 8), "png": png}])
    options = schema([{"name": "png", "type": "png"}, {"name": "jpg", "type": "jpeg"}])
    scan, rows = scan_all(tmp_path / "t", tmp_path / "work", options)
    assert scan.schema.names == ("png", "jpg")
    assert image_bytes(scan, rows[0]) == jpeg_bytes(8, 8)
    assert resolved(scan, rows[0]) == {"png": png}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([{"name": "txt", "type": "text"}], r"the schema has no jpeg field"),
        (
            [
                {"name": "jpg", "type": "jpeg"},
                {"name": "txt", "type": "text"},
                {"name": "txt.zst", "type": "text", "zstd": {"level": 3}},
            ],
            r"the schema's fields 'txt' and 'txt\.zst' both take the 'txt' member",
        ),
    ],
)
def test_schema_errors(
    shards: Path, tmp_path: Path, fields: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(SourceError, match=message):
        scan_all(shards, tmp_path / "work", schema(fields))


def test_members_that_cannot_be_fields_are_left_out_with_a_warning(tmp_path: Path) -> None:
    jpeg = jpeg_bytes(8, 8)
    write_tar(
        tmp_path / "t/0.tar",
        [
            ("a.jpg", jpeg),
            ("a.cls", b"1"),
            ("a.txt.zst", b"(\xb5/\xfd"),
            ("a.depth-map.png", b"x"),
        ],
    )
    write_tar(tmp_path / "t/1.tar", [("b.jpg", jpeg), ("b.cls", b"2"), ("b.late", b"y")])
    with pytest.warns(LeftOutWarning) as caught:
        scan, rows = scan_all(tmp_path / "t", tmp_path / "work")
    assert scan.schema == V1_SCHEMA
    assert [r.fields for r in rows] == [b"", b""]
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 3
    assert "0.tar: sample 'a': member 'depth-map.png' is not a field name" in messages[0]
    assert "0.tar: sample 'a': member 'txt.zst' is zstd-compressed" in messages[1]
    assert (
        "1.tar: sample 'b': member 'late' is not among the fields found in the first shard's "
        "samples" in messages[2]
    )


def test_the_label_member_is_required_when_the_schema_has_a_label(tmp_path: Path) -> None:
    jpeg = jpeg_bytes(8, 8)
    write_tar(tmp_path / "t/0.tar", [("a.jpg", jpeg), ("a.cls", b"1"), ("b.jpg", jpeg)])
    with pytest.raises(SourceError, match=r"0\.tar: sample 'b' has no cls member; members"):
        scan_all(tmp_path / "t", tmp_path / "work")


def test_a_remote_first_shard_is_copied_when_the_scan_opens(shards: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    source = f"pipe:cat {shards}/a-{{000..001}}.tar"
    scan, rows = scan_all(source, work, kind="wds")
    assert scan.schema.names == ("jpg", "cls", "depth.npy", "json", "seg.png", "txt", "xyz")
    copies = work / "sources"
    assert sorted(p.name for p in copies.iterdir()) == ["000000.tar", "000001.tar"]
    assert (copies / "000000.tar").read_bytes() == (shards / "a-000.tar").read_bytes()
    assert [image_bytes(scan, r) for r in rows] == [sample(i)["jpg"] for i in range(6)]
    assert resolved(scan, rows[4])["xyz"] == sample(4)["xyz"]


def test_opening_surveys_before_the_rows_stream(shards: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    scan = open_source(f"pipe:cat {shards}/a-{{000..001}}.tar", "wds", work)
    assert sorted(p.name for p in (work / "sources").iterdir()) == ["000000.tar"]
    assert len(list(scan.rows)) == 6


def test_the_survey_stops_after_its_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wds, "SURVEY_SAMPLES", 2)
    jpeg = jpeg_bytes(8, 8)
    write_tar(tmp_path / "t/0.tar", [])  # no samples: the survey looks at the next shard
    write_tar(
        tmp_path / "t/1.tar",
        [
            ("a.jpg", jpeg),
            ("a.txt", b"1"),
            ("b.jpg", jpeg),
            ("c.jpg", jpeg),
            ("c.json", b"{}"),
        ],
    )
    for source, kind in ((tmp_path / "t", "auto"), (f"pipe:cat {tmp_path}/t/1.tar", "wds")):
        with pytest.warns(LeftOutWarning, match=r"member 'json' is not among the fields"):
            scan, rows = scan_all(source, tmp_path / f"work-{kind}", kind=kind)
        assert scan.schema.names == ("jpg", "txt")
        assert scan.schema["txt"].optional
        assert len(rows) == 3
    copy = tmp_path / "work-wds" / "sources" / "000000.tar"
    assert copy.read_bytes() == (tmp_path / "t/1.tar").read_bytes()  # copied whole all the same


# --- end to end ------------------------------------------------------------------------------


def test_build_reads_back_every_member(shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(shards, out, BuildOptions(workers=1, progress=False))
    stored = read_fields(out)
    assert len(stored) == 6
    for i, got in enumerate(stored):
        s = sample(i, txt=i != 1)
        assert got["jpg"] == s["jpg"]
        assert got["label"] == i % 2
        np.testing.assert_array_equal(got["depth.npy"], s["depth.npy"])
        assert got["json"] == s["json"]
        assert got["seg.png"] == s["seg.png"]
        assert got["xyz"] == s["xyz"]
        assert got.get("txt") == s.get("txt")
