"""verify_dataset on record (TFRecord) datasets: a clean one passes (decoded too, its label
varints included); a flipped bit anywhere in a record, a truncated or over-long shard, a DALI
`.idx` that disagrees with the records and an index that points outside its record are each
reported, naming the shard file and the record's byte offset. verify_remote, on the same
datasets at a `memory://` URL, reports the same problems by URL, reading in windows smaller
than a record."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.formats import DatasetFiles, Index
from fastpack.formats.tfrecord import parse_record_index
from fastpack.reader import verify_dataset, verify_remote

from tests.reader._tfrecord_data import build_fields_pair

from ..conftest import refresh_manifest, section

SAMPLES = 15


@pytest.fixture
def built(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """15 samples in record shards of 3 or 4."""
    source = make_image_folder(classes=3, per_class=5, size=48)
    out = tmp_path / "ds"
    options = BuildOptions(workers=1, shard_size=20_000, progress=False, shard_format="tfrecord")
    build(source, out, options)
    return out


def index_of(root: Path) -> Index:
    return DatasetFiles(root).index


class Place(NamedTuple):
    """Where sample `i` is: its shard file, its record's number and offset in it, and its
    field's bytes."""

    path: Path
    record: int
    record_offset: int
    record_size: int
    offset: int
    size: int


def place(root: Path, i: int, field: str = "jpg") -> Place:
    index = index_of(root)
    shard, offset, size = index.locate(i, field, 1 << 40)
    path = root / f"shards/{shard:06d}.tfrecord"
    records = parse_record_index(path.with_suffix(".idx").read_text(), "idx")
    record = next(k for k, (start, length) in enumerate(records)
                  if start <= offset < start + length)  # fmt: skip
    return Place(path, record, *records[record], offset, size)


def flip(path: Path, offset: int, mask: int = 0x01) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ mask]))


def record_problem(p: Place, reason: str) -> str:
    return f"{p.path}: record {p.record} at byte {p.record_offset}: {reason}"


def test_clean_dataset(built: Path, publish: Callable[[Path], str]) -> None:
    report = verify_dataset(built, decode=True)
    assert report.ok, report.format()
    assert report.samples_checked == SAMPLES
    assert report.shards_checked == index_of(built).num_shards >= 4
    remote = verify_remote(publish(built), decode=True, chunk_bytes=1000)
    assert remote.ok, remote.format()
    assert remote.samples_checked == SAMPLES


def test_clean_multi_field_dataset(tmp_path: Path, publish: Callable[[Path], str]) -> None:
    """zstd with a dictionary, masks, boxes, absent and empty optional members, decoded."""
    records = build_fields_pair(tmp_path, shard_size=40_000).records
    report = verify_dataset(records, decode=True)
    assert report.ok, report.format()
    assert verify_remote(publish(records), decode=True, chunk_bytes=4096).ok


def test_flipped_bit_in_an_image(built: Path) -> None:
    p = place(built, 4)
    flip(p.path, p.offset + p.size // 2, 0x40)
    problems = verify_dataset(built).problems
    key = index_of(built).key(4)
    assert len(problems) == 3, problems
    assert problems[0].startswith(f"{p.path}: sha256 ")
    assert problems[1].startswith(record_problem(p, "data CRC mismatch"))
    assert problems[2].startswith(f"{p.path}: sample 4 (key {key}) field 'jpg': crc32 ")


def test_flipped_bit_in_a_label_varint(built: Path) -> None:
    p = place(built, 7, "cls")
    assert p.size == 1
    flip(p.path, p.offset, 0x02)
    problems = verify_dataset(built, decode=True).problems
    assert len(problems) == 3, problems
    assert problems[1].startswith(record_problem(p, "data CRC mismatch"))
    assert "sample 7" in problems[2]
    assert "field 'cls': crc32 " in problems[2]


@pytest.mark.parametrize(
    ("where", "reason"),
    [(2, "length CRC mismatch"), (9, "length CRC mismatch"), (-1, "data CRC mismatch")],
    ids=["length", "length-crc", "data-crc"],
)
def test_flipped_bit_in_a_record_header_or_footer(built: Path, where: int, reason: str) -> None:
    """A bit of the length (bytes 0-7), of its CRC (8-11) or of the data's CRC (the last 4)."""
    p = place(built, 5)
    assert p.record > 0  # records before it are intact
    flip(p.path, p.record_offset + where if where >= 0 else p.record_offset + p.record_size - 1)
    problems = verify_dataset(built).problems
    assert any(problem.startswith(record_problem(p, reason)) for problem in problems), problems
    assert all(str(p.path) in problem for problem in problems), problems


def test_truncated_shard(built: Path) -> None:
    p = place(built, SAMPLES - 1)
    size = p.path.stat().st_size
    os.truncate(p.path, size - 10)
    problems = verify_dataset(built).problems
    assert problems[0] == f"{p.path}: {size - 10} bytes, the manifest records {size}"
    assert record_problem(p, f"truncated: the record needs bytes up to {size}, the file has "
                          f"{size - 10}") in problems  # fmt: skip


def test_bytes_after_the_last_record(built: Path) -> None:
    p = place(built, SAMPLES - 1)
    size = p.path.stat().st_size
    with p.path.open("ab") as f:
        f.write(bytes(20))
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    assert problems == [f"{p.path}: record {p.record + 1} at byte {size}: length CRC mismatch"
                        f"{problems[0].rsplit('length CRC mismatch', 1)[1]}"]  # fmt: skip


def test_dali_index_disagrees(built: Path) -> None:
    p = place(built, 1)
    idx = p.path.with_suffix(".idx")
    lines = idx.read_text().splitlines()
    lines[p.record] = f"{p.record_offset} {p.record_size + 1}"
    idx.write_text("\n".join(lines) + "\n")
    problems = verify_dataset(built).problems
    assert problems[0].startswith(f"{idx}: sha256 ")  # the manifest records the .idx's too
    assert problems[1:] == [
        f"{idx}: line {p.record + 1} is '{p.record_offset} {p.record_size + 1}', record "
        f"{p.record} is at byte {p.record_offset} with {p.record_size} bytes"
    ]
    idx.write_text("\n".join(lines[:-1]) + "\n")
    problems = verify_dataset(built).problems
    assert f"{idx}: {len(lines) - 1} lines, the shard holds {len(lines)} records" in problems
    idx.write_text("0 banana\n")
    assert verify_dataset(built).problems[1:] == [
        f"ShardFormatError: {idx}: line 1 is not '<offset> <size>': '0 banana'"
    ]


def test_index_points_outside_its_record(built: Path) -> None:
    """Sample 1's image offset moved into the record after its own."""
    p, q = place(built, 1), place(built, 2)
    assert q.path == p.path
    size = min(p.size, q.size)
    for name, value in (("f0.offset", q.offset), ("f0.size", size)):
        column = section(built, name)
        column[1] = value
        column.flush()
        del column
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    key = index_of(built).key(1)
    data = p.record_offset + 12
    assert problems[0].startswith(f"{built / 'fastpack.json'}: stats.payload_bytes is ")
    assert problems[1] == (
        f"{p.path}: sample 1 (key {key}) field 'jpg': bytes [{q.offset}, {q.offset + size}) "
        f"lie outside the data [{data}, {p.record_offset + p.record_size - 4}) of record "
        f"{p.record} at byte {p.record_offset}"
    )
    assert any("field 'jpg': crc32" in problem for problem in problems[2:]), problems


def test_index_label_disagrees_with_the_record(built: Path) -> None:
    labels = section(built, "label")
    labels[6] += 1
    labels.flush()
    label = int(labels[6])
    del labels
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    assert len(problems) == 3, problems
    assert (
        f"sample 6 of class {label} ('class_0{label}') comes from 'class_0{label - 1}/"
        in (problems[0])
    )
    assert problems[1].endswith(
        f"field 'cls': 'image/class/label' holds [{label - 1}], the label is {label}"
    )
    assert problems[2].endswith(f"field 'cls': holds {bytes([label - 1])!r}, label is {label}")


@pytest.mark.parametrize("chunk_bytes", [700, 1 << 20])
def test_remote_reports_what_local_reports(
    built: Path, publish: Callable[[Path], str], chunk_bytes: int
) -> None:
    """Damage of each kind at once, in windows smaller and larger than a record."""
    image, label, header = place(built, 0), place(built, 5, "cls"), place(built, 9)
    flip(image.path, image.offset + 100)
    flip(label.path, label.offset)
    flip(header.path, header.record_offset + 3)
    tail = place(built, SAMPLES - 1)
    os.truncate(tail.path, tail.path.stat().st_size - 7)
    idx = place(built, 6).path.with_suffix(".idx")
    assert len({image.path, label.path, header.path, tail.path, idx.with_suffix(".tfrecord")}) == 5
    idx.write_text(idx.read_text().replace("0 ", "1 ", 1))
    local = verify_dataset(built, decode=True)
    assert len(local.problems) == 12, local.format()
    assert f"{idx}: sha256 " in local.format()
    assert any(problem.startswith(f"{idx}: line 1 is '1 ") for problem in local.problems)
    url = publish(built)
    remote = verify_remote(url, decode=True, chunk_bytes=chunk_bytes)
    assert remote.problems == [p.replace(str(built), url) for p in local.problems]
    assert (remote.shards_checked, remote.samples_checked) == (
        local.shards_checked, local.samples_checked,
    )  # fmt: skip
