"""List files with more columns than path and label: the fields they give, typed with or without
a schema, and the errors that name the file, the line and the column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastpack.compiler import SourceError
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.compiler.planning.make_plan import make_plan
from fastpack.compiler.planning.plan_store import Plan
from fastpack.compiler.sources.list_file.source import scan_list
from fastpack.compiler.sources.sample_fields import FileRef, unpack_fields
from fastpack.compiler.sources.scan import SourceOptions
from fastpack.formats.schema import V1_SCHEMA

from tests.conftest import jpeg_bytes

JPEG = jpeg_bytes(16, 16)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def options(fields: list[dict[str, Any]]) -> SourceOptions:
    return SourceOptions(schema=parse_build_schema(fields, "schema.json"))


def rows(listing: Path, opts: SourceOptions | None = None) -> list[tuple[str, int, dict[str, Any]]]:
    scan = scan_list(listing, opts)
    found = [(r.source.decode(), r.label, unpack_fields(r.fields)) for r in scan.rows]
    if scan.labels is not None:
        _, lookup = scan.labels.finish()
        found = [(s, int(lookup[label]) if label >= 0 else -1, f) for s, label, f in found]
    return found


def test_extra_columns_without_a_schema(tmp_path: Path) -> None:
    listing = write(
        tmp_path / "l.csv",
        "Path,LABEL,caption,seg.png,meta.json\n"
        'a.jpg,1,a cat,a.png,"{""k"": 1}"\n'
        "b.jpg,2,,b.png,[]\n",
    )
    scan = scan_list(listing)
    assert [(f.name, f.type, f.optional) for f in scan.schema.fields] == [
        ("jpg", "jpeg", False),
        ("cls", "class", False),
        ("caption.txt", "text", True),
        ("seg.png", "png", False),
        ("meta.json", "json", False),
    ]
    assert rows(listing) == [
        (
            "a.jpg",
            1,
            {"caption.txt": "a cat", "seg.png": FileRef("a.png"), "meta.json": '{"k": 1}'},
        ),
        ("b.jpg", 2, {"seg.png": FileRef("b.png"), "meta.json": "[]"}),
    ]


def test_jsonl_keys_typed_by_their_values(tmp_path: Path) -> None:
    items = [
        {
            "path": "a.jpg",
            "label": "x",
            "caption": "hi",
            "n": 3,
            "ids": [1, 2],
            "boxes": [[0, 0, 1, 1]],
            "score": 0.5,
            "meta": {"a": 1},
            "flag": True,
            "mask.png": "m/a.png",
            "later": None,
        },
        {
            "path": "b.jpg",
            "label": "y",
            "caption": "yo",
            "n": 4,
            "ids": [],
            "boxes": [],
            "score": 1.5,
            "meta": [1, "a"],
            "flag": False,
            "mask.png": "m/b.png",
            "later": [2.5],
        },
    ]
    listing = write(tmp_path / "l.jsonl", "".join(json.dumps(i) + "\n" for i in items))
    scan = scan_list(listing)
    assert [(f.name, f.type, f.optional) for f in scan.schema.fields[2:]] == [
        ("caption.txt", "text", False),
        ("n.cls", "class", False),
        ("ids.json", "class_ids", False),
        ("boxes.npy", "ndarray", False),
        ("score.npy", "ndarray", False),
        ("meta.json", "json", False),
        ("flag.json", "json", False),
        ("mask.png", "png", False),
        ("later.npy", "ndarray", True),
    ]
    (_, label, fields), _ = rows(listing)
    assert label == 0  # class names: sorted
    assert fields["mask.png"] == FileRef("m/a.png")
    assert "later.npy" not in fields


def test_a_list_of_images_and_labels_plans_no_fields(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes(JPEG)
    listing = write(tmp_path / "l.csv", "path,label\na.jpg,1\n")
    assert scan_list(listing).schema == V1_SCHEMA
    directory = tmp_path / "plan"
    directory.mkdir()
    meta = make_plan(listing, "list", directory, shard_size=1 << 20, shuffle_seed=None)
    assert (meta.schema, meta.fields) == (None, False)
    assert not list(directory.glob("plan.fields.*"))


def test_fields_in_the_plan(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes(JPEG)
    (tmp_path / "a.png").write_bytes(b"\x89PNG....")
    listing = write(tmp_path / "l.csv", "path,label,seg.png\na.jpg,1,a.png\nb.jpg,2,\n")
    directory = tmp_path / "plan"
    directory.mkdir()
    meta = make_plan(listing, "list", directory, shard_size=1 << 20, shuffle_seed=None)
    assert meta.fields
    assert meta.text_cells
    assert meta.total_size == len(JPEG) + 8 + sum(
        len(f) for f in Plan(directory).fields(Plan(directory).inputs(0, 2))
    )
    plan = Plan(directory)
    assert [unpack_fields(f) for f in plan.fields(plan.inputs(0, 2))] == [
        {"seg.png": FileRef("a.png")},
        {},
    ]


@pytest.mark.parametrize(
    ("name", "text"), [("l.csv", True), ("l.TSV", True), ("l.jsonl", False), ("l.JSONL", False)]
)
def test_the_scan_says_whether_its_cells_are_text(tmp_path: Path, name: str, text: bool) -> None:
    """CSV and TSV cells are text for the shard jobs to parse, JSON lines typed values: the
    list scan says which (`SourceScan.text_cells`) and the plan records what the scan says."""
    (tmp_path / "a.jpg").write_bytes(JPEG)
    body = '{"path": "a.jpg", "label": 1, "caption": "a cat"}\n'
    if text:
        sep = "\t" if name.lower().endswith(".tsv") else ","
        body = f"path{sep}label{sep}caption\na.jpg{sep}1{sep}a cat\n"
    listing = write(tmp_path / name, body)
    assert scan_list(listing).text_cells is text
    directory = tmp_path / "plan"
    directory.mkdir()
    meta = make_plan(listing, "list", directory, shard_size=1 << 20, shuffle_seed=None)
    assert meta.fields
    assert meta.text_cells is text


SCHEMA: list[dict[str, Any]] = [
    {"name": "jpg", "type": "jpeg", "column": "image"},
    {"name": "cls", "type": "class", "column": "y", "classes": ["cat", "dog"]},
    {"name": "txt", "type": "text", "column": "caption", "optional": True},
]


def test_a_schema_names_the_columns(tmp_path: Path) -> None:
    listing = write(
        tmp_path / "l.tsv",
        "caption\ty\timage\tunused\n"
        "a cat\tcat\ta.jpg\tx\n"
        "\tdog\tb.jpg\tx\n"
        "?\t1\tc.jpg\tx\n"
        "?\tfish\td.jpg\tx\n"
        "?\t\te.jpg\tx\n",
    )
    scan = scan_list(listing, options(SCHEMA))
    assert scan.classes == ("cat", "dog")
    assert scan.schema.names == ("jpg", "cls", "txt")
    assert rows(listing, options(SCHEMA)) == [
        ("a.jpg", 0, {"txt": "a cat"}),
        ("b.jpg", 1, {}),
        ("c.jpg", 1, {"txt": "?"}),
        ("d.jpg", -1, {"txt": "?", "cls": "fish"}),  # rejected by its shard job
        ("e.jpg", -1, {"txt": "?", "cls": None}),  # absent: rejected, the field is required
    ]


def test_jsonl_with_a_schema_and_no_label(tmp_path: Path) -> None:
    fields = [
        {"name": "jpg", "type": "jpeg", "column": "img"},
        {"name": "ids.json", "type": "class_ids", "column": "ids"},
    ]
    listing = write(tmp_path / "l.jsonl", '{"img": "a.jpg", "ids": [3], "label": 7}\n')
    scan = scan_list(listing, options(fields))
    assert (scan.labels, scan.classes) == (None, ())
    assert rows(listing, options(fields)) == [("a.jpg", -1, {"ids.json": [3]})]


@pytest.mark.parametrize(
    ("name", "text", "fields", "message"),
    [
        (
            "l.csv",
            "path,label\na.jpg,1\n",
            SCHEMA,
            r"l\.csv:1: the header has no column 'image'; its columns are path, label",
        ),
        (
            "l.csv",
            "path,label,caption\na.jpg,1\n",
            None,
            r"l\.csv:2: expected 3 columns \(path, label, caption\), found 2",
        ),
        (
            "l.csv",
            "path,label,My Caption\na.jpg,1,x\n",
            None,
            r"l\.csv: column 'My Caption' cannot name a field",
        ),
        (
            "l.csv",
            "path,label,cls\na.jpg,1,2\n",
            None,
            r"l\.csv: schema: field 'cls' appears twice",
        ),
        ("l.csv", "path,label,x\na.jpg,,y\n", None, r"l\.csv:2: empty label"),
        (
            "l.jsonl",
            '{"path": "a.jpg", "label": 1, "x": 1}\n' * 1000 + '{"path": "b.jpg", '
            '"label": 1, "y": 2}\n',
            None,
            r"l\.jsonl:1001: keys \['y'\] are not among those of the first 1000 lines",
        ),
        (
            "l.jsonl",
            '{"path": "a.jpg", "label": 1.5, "x": 1}\n',
            None,
            r"l\.jsonl:1: expected an integer or string 'label', found 1\.5",
        ),
        (
            "l.jsonl",
            '{"image": 3}\n',
            SCHEMA,
            r"l\.jsonl:1: expected an object with a string 'image'",
        ),
        (
            "l.csv",
            "path\na.jpg\n",
            [{"name": "txt", "type": "text"}],
            r"l\.csv: a list file's schema needs a jpeg field",
        ),
    ],
)
def test_errors_name_the_file_and_line(
    tmp_path: Path, name: str, text: str, fields: list[dict[str, Any]] | None, message: str
) -> None:
    listing = write(tmp_path / name, text)
    with pytest.raises(SourceError, match=message):
        rows(listing, options(fields) if fields is not None else None)
