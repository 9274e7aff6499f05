"""Planning each kind of source: order, labels, classes, detection and malformed input."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from fastpack.compiler import BuildOptions, SourceError
from fastpack.compiler.planning.make_plan import make_plan
from fastpack.compiler.planning.plan_store import Plan, PlanMeta
from fastpack.compiler.sources.detect import detect_kind

from tests.conftest import jpeg_bytes, png_bytes

JPEG = jpeg_bytes(16, 16)


def plan_rows(
    source: Path | str, tmp_path: Path, source_format: str = "auto"
) -> tuple[PlanMeta, list[tuple[str, int, int]]]:
    kind = detect_kind(source, source_format)
    directory = tmp_path / "plan"
    directory.mkdir()
    make_plan(source, kind, directory, shard_size=1 << 20, shuffle_seed=None)
    plan = Plan(directory)
    rows = plan.inputs(0, plan.meta.num_inputs)
    sources = [s.decode() for s in plan.sources(rows)]
    labels, sizes = plan.column("label", rows).tolist(), plan.column("size", rows).tolist()
    return plan.meta, list(zip(sources, labels, sizes, strict=True))


def write(path: Path, data: bytes | str = JPEG) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --- ImageFolder ---------------------------------------------------------------------------


def test_folder_order_labels_and_filtering(tmp_path: Path) -> None:
    root = tmp_path / "src"
    for name in [
        "b/2.jpg",
        "b/10.JPG",
        "b/1.png",
        "a/x.Jpeg",
        "a/sub/y.webp",
        "a/z.tif",
        "a/w.BMP",
        "a/v.TIFF",
    ]:
        write(root / name)
    for ignored in ["a/notes.txt", "a/.hidden.jpg", "a/meta.json", "top.jpg", ".cache/q.jpg"]:
        write(root / ignored)
    (root / "c_empty").mkdir()
    meta, rows = plan_rows(root, tmp_path)
    assert meta.kind == "folder"
    assert meta.classes == ("a", "b", "c_empty")
    assert [(s, label) for s, label, _ in rows] == [
        ("a/sub/y.webp", 0),
        ("a/v.TIFF", 0),
        ("a/w.BMP", 0),
        ("a/x.Jpeg", 0),
        ("a/z.tif", 0),
        ("b/1.png", 1),
        ("b/10.JPG", 1),
        ("b/2.jpg", 1),
    ]
    assert {size for _, _, size in rows} == {len(JPEG)}


def test_folder_keeps_unreadable_entries_for_the_jobs_to_reject(tmp_path: Path) -> None:
    root = tmp_path / "src"
    write(root / "a/good.jpg")
    (root / "a/broken.jpg").symlink_to(root / "a/missing.jpg")
    os.mkfifo(root / "a/fifo.jpg")
    _, rows = plan_rows(root, tmp_path)
    assert [(s, size) for s, _, size in rows] == [
        ("a/broken.jpg", 0),
        ("a/fifo.jpg", 0),
        ("a/good.jpg", len(JPEG)),
    ]


def test_folder_survives_a_symlink_loop(tmp_path: Path) -> None:
    root = tmp_path / "src"
    write(root / "a/1.jpg")
    (root / "a/loop").symlink_to(root / "a")
    _, rows = plan_rows(root, tmp_path)
    assert [s for s, _, _ in rows] == ["a/1.jpg"]


# --- list files ----------------------------------------------------------------------------


def test_csv_with_header_and_integer_labels(tmp_path: Path) -> None:
    write(tmp_path / "imgs/a.jpg")
    write(tmp_path / "imgs/b.jpg", png_bytes())
    listing = write(tmp_path / "list.csv", "path,label\nimgs/b.jpg,7\n\nimgs/a.jpg, -2\n")
    meta, rows = plan_rows(listing, tmp_path)
    assert meta.kind == "list"
    assert meta.classes == ()
    assert rows == [("imgs/b.jpg", 7, len(png_bytes())), ("imgs/a.jpg", -2, len(JPEG))]


def test_names_map_to_sorted_class_indices(tmp_path: Path) -> None:
    listing = write(
        tmp_path / "l.tsv", "x/1.jpg\tzebra\nx/2.jpg\tant\nx/3.jpg\t10\nx/4.jpg\tzebra\n"
    )
    meta, rows = plan_rows(listing, tmp_path)
    assert meta.classes == ("10", "ant", "zebra")
    assert [(s, label) for s, label, _ in rows] == [
        ("x/1.jpg", 2),
        ("x/2.jpg", 1),
        ("x/3.jpg", 0),
        ("x/4.jpg", 2),
    ]
    assert {size for _, _, size in rows} == {0}  # missing files: rejected later, not here


def test_csv_quoting_and_no_header(tmp_path: Path) -> None:
    listing = write(tmp_path / "l.csv", '"dir, with comma/a.jpg",cat\nb.jpg,dog\n')
    meta, rows = plan_rows(listing, tmp_path)
    assert [(s, label) for s, label, _ in rows] == [("dir, with comma/a.jpg", 0), ("b.jpg", 1)]
    assert meta.classes == ("cat", "dog")


def test_jsonl(tmp_path: Path) -> None:
    lines = [{"path": "a.jpg", "label": 3}, {"path": "b.jpg", "label": 1, "extra": "ok"}]
    listing = write(tmp_path / "l.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    meta, rows = plan_rows(listing, tmp_path)
    assert [(s, label) for s, label, _ in rows] == [("a.jpg", 3), ("b.jpg", 1)]
    assert meta.classes == ()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("l.csv", "a.jpg,1\nb.jpg,2,3\n", r"l\.csv:2: expected 2 columns \(path, label\), found 3"),
        ("l.csv", "a.jpg\n", r"l\.csv:1: expected 2 columns"),
        ("l.tsv", "a.jpg\t1\n\nb.jpg 2\n", r"l\.tsv:3: expected 2 columns"),
        ("l.csv", "a.jpg,1\n,2\n", r"l\.csv:2: empty path"),
        ("l.csv", "a.jpg,  \n", r"l\.csv:1: empty label"),
        (
            "l.jsonl",
            '{"path": "a.jpg", "label": 1}\n{"path": "b.jpg"\n',
            r"l\.jsonl:2: not valid JSON",
        ),
        ("l.jsonl", '{"path": "a.jpg"}\n', r"l\.jsonl:1: expected an object with a string 'path'"),
        ("l.jsonl", '{"path": "a.jpg", "label": 1.5}\n', r"l\.jsonl:1: expected an object"),
        ("l.jsonl", '{"path": "a.jpg", "label": true}\n', r"l\.jsonl:1: expected an object"),
        ("l.jsonl", '["a.jpg", 1]\n', r"l\.jsonl:1: expected an object"),
    ],
)
def test_malformed_list_lines_name_file_and_line(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    listing = write(tmp_path / name, text)
    with pytest.raises(SourceError, match=message):
        plan_rows(listing, tmp_path)


def test_list_that_is_not_utf8(tmp_path: Path) -> None:
    listing = write(tmp_path / "l.csv", b"a.jpg,1\n\xff\xfe.jpg,2\n")
    with pytest.raises(SourceError, match=r"l\.csv: not UTF-8 text"):
        plan_rows(listing, tmp_path)


# --- webdataset tars -----------------------------------------------------------------------


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:  # what webdataset writes
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1.5
            tar.addfile(info, io.BytesIO(data))
    return path


def test_wds_groups_members_by_key(tmp_path: Path) -> None:
    png = png_bytes()
    write_tar(tmp_path / "tars/b.tar", [("k9.cls", b"5"), ("k9.jpg", JPEG)])
    write_tar(
        tmp_path / "tars/a.tar",
        [
            ("__meta__.json", b"{}"),
            ("d/s1.JPG", JPEG),
            ("d/s1.cls", b"3\n"),
            ("d/s1.json", b"{}"),
            ("s2.seg.png", b"x"),
            ("s2.png", png),
            ("s2.cls", b"3"),
        ],
    )
    meta, rows = plan_rows(tmp_path / "tars", tmp_path)
    assert (meta.kind, meta.containers, meta.classes) == ("wds", ("a.tar", "b.tar"), ())
    assert rows == [
        ("a.tar:d/s1", 3, len(JPEG)),
        ("a.tar:s2", 3, len(png)),
        ("b.tar:k9", 5, len(JPEG)),
    ]
    single, rows = plan_rows(tmp_path / "tars/b.tar", tmp_path / "tars")
    assert (single.containers, rows) == (("b.tar",), [("b.tar:k9", 5, len(JPEG))])


def test_wds_class_names_in_cls(tmp_path: Path) -> None:
    write_tar(
        tmp_path / "t/0.tar",
        [("a.jpg", JPEG), ("a.cls", b"dog"), ("b.jpg", JPEG), ("b.cls", b"cat")],
    )
    meta, rows = plan_rows(tmp_path / "t", tmp_path)
    assert meta.classes == ("cat", "dog")
    assert [label for _, label, _ in rows] == [1, 0]


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([("a.jpg", JPEG), ("a.cls", b"1"), ("b.jpg", JPEG)], r"0\.tar: sample 'b' has no cls"),
        (
            [("a.txt", b"hi"), ("a.cls", b"1")],
            r"0\.tar: sample 'a' has no image member \(jpg, jpeg, png, webp\); "
            r"members: \['cls', 'txt'\]",
        ),
        ([("a.jpg", JPEG), ("a.cls", b" ")], r"0\.tar: sample 'a' has an empty cls member"),
        ([("a.jpg", JPEG), ("a.jpg", JPEG), ("a.cls", b"1")], r"sample 'a' has two 'jpg' members"),
    ],
)
def test_wds_malformed_samples(
    tmp_path: Path, members: list[tuple[str, bytes]], message: str
) -> None:
    write_tar(tmp_path / "t/0.tar", members)
    with pytest.raises(SourceError, match=message):
        plan_rows(tmp_path / "t", tmp_path)


def test_wds_not_a_tar(tmp_path: Path) -> None:
    write(tmp_path / "t/0.tar", b"this is not a tar archive" * 40)
    with pytest.raises(SourceError, match=r"0\.tar: not a readable tar"):
        plan_rows(tmp_path / "t", tmp_path)


# --- detection and empty sources -----------------------------------------------------------


def test_detection(tmp_path: Path) -> None:
    write(tmp_path / "folder/cls/a.jpg")
    write_tar(tmp_path / "tars/0.tar", [])
    for name in ("l.csv", "l.TSV", "l.jsonl"):
        write(tmp_path / name, "")
    assert detect_kind(tmp_path / "folder", "auto") == "folder"
    assert detect_kind(tmp_path / "tars", "auto") == "wds"
    assert detect_kind(tmp_path / "tars/0.tar", "auto") == "wds"
    assert [detect_kind(tmp_path / n, "auto") for n in ("l.csv", "l.TSV", "l.jsonl")] == [
        "list"
    ] * 3
    assert detect_kind(tmp_path / "tars", "folder") == "folder"


@pytest.mark.parametrize(
    ("name", "source_format", "message"),
    [
        ("notes.txt", "auto", r"notes\.txt: unknown source format"),
        ("missing", "auto", r"missing: source not found"),
        ("folder", "list", r"folder: a list source must be a file"),
        ("l.csv", "wds", r"l\.csv: a wds source cannot be a \.csv file"),
    ],
)
def test_detection_errors(tmp_path: Path, name: str, source_format: str, message: str) -> None:
    write(tmp_path / "notes.txt", "hello")
    write(tmp_path / "l.csv", "")
    (tmp_path / "folder").mkdir()
    with pytest.raises(SourceError, match=message):
        detect_kind(tmp_path / name, source_format)


def test_unknown_source_format_option() -> None:
    with pytest.raises(SourceError, match="unknown source format 'zip'"):
        BuildOptions(source_format="zip")


@pytest.mark.parametrize("layout", ["empty-dir", "empty-classes", "header-only", "empty-tar"])
def test_empty_sources(tmp_path: Path, layout: str) -> None:
    source = tmp_path / "src"
    source.mkdir()
    if layout == "empty-classes":
        write(source / "a/readme.txt", "no images")
    elif layout == "header-only":
        source = write(source / "l.csv", "path,label\n")
    elif layout == "empty-tar":
        write_tar(source / "0.tar", [])
    with pytest.raises(SourceError, match="no images found"):
        plan_rows(source, tmp_path)
