"""Which TFRecord files a source names: detection of files, directories, globs and URLs (brace
patterns, `pipe:` commands, S3), the copies of remote files, and reading a file in chunks."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from fastpack.compiler import BuildOptions, SourceError, build
from fastpack.compiler.sources.detect import detect_kind
from fastpack.compiler.sources.tfrecord.files import RecordFile, file_records, is_tfrecord_name
from fastpack.formats.tfrecord import RecordProblem, RecordSpan, scan_records, write_file

from tests.compiler._helpers import tree_bytes
from tests.compiler.sources._scans import image_bytes, scan_all
from tests.compiler.sources.tfrecord.test_source import IMAGES, LABELS, example_bytes
from tests.s3_server import S3Server

OPTIONS = BuildOptions(workers=1, shard_size=4000, progress=False)
PATTERN = "train-{00000..00002}.tfrecord"


def payload(i: int) -> bytes:
    return example_bytes([("image/encoded", IMAGES[i]), ("image/class/label", LABELS[i])])


def write_records(path: Path, numbers: range | list[int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        write_file(file, [payload(i) for i in numbers])
    return path


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    """Three files of three records each, with DALI-style index files beside them."""
    root = tmp_path / "shards"
    for n in range(3):
        write_records(root / f"train-{n:05d}.tfrecord", range(3 * n, 3 * n + 3))
        (root / f"train-{n:05d}.idx").write_text("0 1\n")
    return root


@pytest.fixture
def from_directory(shards: Path, tmp_path: Path) -> dict[str, bytes]:
    out = tmp_path / "from-dir"
    build(shards, out, OPTIONS)
    return tree_bytes(out)


def test_names() -> None:
    assert all(
        is_tfrecord_name(n)
        for n in (
            "a.tfrecord",
            "A.TFRecords",
            "train.tfrecord-00000-of-01024",
            "imagenet2012-train.tfrecord-00012-of-01024",
            "dir/x.tfrecord",
        )
    )
    assert not any(
        is_tfrecord_name(n)
        for n in ("train-00000-of-01024", "a.tfrecord.idx", "a.tar", "tfrecord", "x.tfrecord-1")
    )


def test_detection(shards: Path, tmp_path: Path) -> None:
    """A file, a directory of them (beside other files), a glob; other names with the format."""
    assert detect_kind(shards, "auto") == "tfrecord"
    assert detect_kind(shards / "train-00000.tfrecord", "auto") == "tfrecord"
    assert detect_kind(f"{shards}/train-*.tfrecord", "auto") == "tfrecord"
    assert detect_kind(f"{tmp_path}/**/*.tfrecord", "auto") == "tfrecord"
    sharded = write_records(tmp_path / "tfds/mnist-train.tfrecord-00000-of-00001", [0])
    assert detect_kind(sharded.parent, "auto") == "tfrecord"
    slim = write_records(tmp_path / "slim/train-00000-of-00002", [0, 1])
    write_records(tmp_path / "slim/train-00001-of-00002", [2])
    assert detect_kind(slim, "tfrecord") == "tfrecord"
    assert detect_kind(f"{slim.parent}/train-*", "tfrecord") == "tfrecord"
    _, rows = scan_all(f"{slim.parent}/train-*", tmp_path / "work", kind="tfrecord")
    assert [r.source.decode() for r in rows][::2] == [
        "train-00000-of-00002:0",
        "train-00001-of-00002:0",
    ]
    assert [r.label for r in rows] == LABELS[:3]


@pytest.mark.parametrize(
    ("source", "source_format", "message"),
    [
        ("shards/nothing-*.tfrecord", "auto", r"nothing-\*\.tfrecord: matches no file$"),
        (
            "shards/train-*",
            "auto",
            r"train-\*: matches files not named as TFRecord files .* "
            r"such as .*train-00000\.idx; a glob source is TFRecord files",
        ),
        (
            "shards/train-*.tfrecord",
            "wds",
            r"a wds source must be an existing path; globs are "
            r"TFRecord \(tfrecord\) sources",
        ),
        (
            "mixed",
            "auto",
            r"mixed: holds both \.tar and TFRecord files; give the format "
            r"\(wds or tfrecord\)",
        ),
        ("notes.csv", "tfrecord", r"notes\.csv: a tfrecord source cannot be a \.csv file"),
        ("plain.bin", "auto", r"plain\.bin: unknown source format; .* a TFRecord file, a glob"),
    ],
)
def test_detection_errors(
    shards: Path, tmp_path: Path, source: str, source_format: str, message: str
) -> None:
    write_records(tmp_path / "mixed/a.tfrecord", [0])
    (tmp_path / "mixed/b.tar").write_bytes(b"")
    (tmp_path / "notes.csv").write_text("path,label\n")
    (tmp_path / "plain.bin").write_bytes(b"")
    with pytest.raises(SourceError, match=message):
        detect_kind(f"{tmp_path}/{source}", source_format)


def test_a_directory_without_tfrecord_names(tmp_path: Path) -> None:
    """With the format given, a directory must still hold files named as TFRecords: a glob
    takes other names."""
    write_records(tmp_path / "slim/train-00000-of-00001", [0])
    with pytest.raises(SourceError, match=r"slim: holds no TFRecord files .* give a glob such as "):
        build(tmp_path / "slim", tmp_path / "out", BuildOptions(source_format="tfrecord"))


def test_brace_pattern_and_file_url_build_the_same_dataset(
    shards: Path, from_directory: dict[str, bytes], tmp_path: Path
) -> None:
    assert detect_kind(f"{shards}/{PATTERN}", "auto") == "tfrecord"
    out = tmp_path / "from-pattern"
    build(f"{shards}/{PATTERN}", out, OPTIONS)
    assert tree_bytes(out) == from_directory
    _, rows = scan_all(f"file://{shards}/train-00001.tfrecord", tmp_path / "work")
    assert rows[0].source.decode() == "train-00001.tfrecord:0"
    listed = "::".join(f"{shards}/train-{n:05d}.tfrecord" for n in (2, 0))  # `::` keeps order
    _, rows = scan_all(listed, tmp_path / "work2")
    assert [r.source.decode() for r in rows][::3] == [
        "train-00002.tfrecord:0",
        "train-00000.tfrecord:0",
    ]


def test_pipe_urls_are_copied_into_the_build_dir(
    shards: Path, from_directory: dict[str, bytes], tmp_path: Path
) -> None:
    source = f"pipe:cat {shards}/{PATTERN}"
    assert detect_kind(source, "auto") == "tfrecord"
    work = tmp_path / "work"
    scan, rows = scan_all(source, work)
    copies = sorted(p.name for p in (work / "sources").iterdir())
    assert copies == ["000000.tfrecord", "000001.tfrecord", "000002.tfrecord"]
    assert [image_bytes(scan, r) for r in rows] == IMAGES[:9]
    assert rows[3].source.decode() == "train-00001.tfrecord:0"
    out = tmp_path / "from-pipe"
    build(source, out, OPTIONS)
    assert tree_bytes(out) == from_directory


def test_s3_brace_pattern(
    shards: Path,
    from_directory: dict[str, bytes],
    s3_env: S3Server,
    s3_bucket: str,
    tmp_path: Path,
) -> None:
    fs = s3_env.filesystem()
    for path in sorted(shards.glob("*.tfrecord")):
        fs.put_file(str(path), f"{s3_bucket}/train/{path.name}")
    out = tmp_path / "from-s3"
    build(f"s3://{s3_bucket}/train/{PATTERN}", out, OPTIONS)
    assert tree_bytes(out) == from_directory
    missing = f"s3://{s3_bucket}/train/train-00009.tfrecord"
    with pytest.raises(SourceError, match=rf"^{missing}: not found$"):
        build(missing, tmp_path / "out2", OPTIONS)


def test_remote_globs_are_refused() -> None:
    with pytest.raises(SourceError, match=r"globs are read on local paths only"):
        detect_kind("s3://bucket/train-*.tfrecord", "auto")
    assert detect_kind("s3://bucket/train-0", "tfrecord") == "tfrecord"


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"gone\.tfrecord: not found$"):
        scan_all(f"file://{tmp_path}/gone.tfrecord", tmp_path / "work", kind="tfrecord")


@pytest.mark.parametrize("chunk", [1, 13, 700, 2048, 5000, 1 << 20])
def test_chunks_give_the_records_of_the_whole_file(tmp_path: Path, chunk: int) -> None:
    """Records cut by a chunk's end start the next chunk; one larger than a chunk is read
    whole; offsets are the file's. The same spans and problems as a scan of the whole file."""
    data = io.BytesIO()
    write_file(data, [payload(i) for i in range(6)])
    damaged = bytearray(data.getvalue())
    spans = [s for s in scan_records(bytes(damaged)) if isinstance(s, RecordSpan)]
    damaged[spans[2].data_offset + 7] ^= 1  # a data CRC mismatch
    damaged = damaged[: spans[5].offset + 30]  # the last record cut off
    path = tmp_path / "d.tfrecord"
    path.write_bytes(bytes(damaged))
    whole = [
        (s.offset, "span", s.size) if isinstance(s, RecordSpan) else (s.offset, "problem", 0)
        for s in scan_records(bytes(damaged))
    ]
    found, images = [], []
    for buffer, base, item in file_records(RecordFile(str(path), "d", path), chunk):
        if isinstance(item, RecordProblem):
            found.append((base + item.offset, "problem", 0))
            continue
        found.append((base + item.offset, "span", item.size))
        images.append(buffer[item.data_offset : item.data_offset + item.size])
    assert found == whole
    assert [kind for _, kind, _ in found] == ["span", "span", "problem", "span", "span", "problem"]
    assert images == [payload(i) for i in (0, 1, 3, 4)]
