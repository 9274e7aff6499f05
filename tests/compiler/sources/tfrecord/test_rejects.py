"""Damaged TFRecord input: each record that cannot be used is a reject naming its file and byte
offset, and the build goes on (with the next record, or after a broken frame with the next
file); a strict build stops there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.sources.sample_fields import WHOLE_SAMPLE, InvalidValue, unpack_fields
from fastpack.formats import read_records

from tests.compiler.sources._scans import image_bytes, scan_all
from tests.compiler.sources.tfrecord.test_source import (
    IMAGES,
    LABELS,
    example_bytes,
    write_records,
)

OPTIONS = BuildOptions(workers=1, shard_size=4000, progress=False)


def good(i: int) -> bytes:
    return example_bytes([("image/encoded", IMAGES[i]), ("image/class/label", LABELS[i])])


def offsets(path: Path) -> list[int]:
    return [span.offset for span, _ in read_records(path)]


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def damaged_source(root: Path) -> dict[str, list[int]]:
    """Five files, and the record offsets each had before it was damaged:

    - a.tfrecord: good, data CRC mismatch, not an Example, no image, no label, the image an
      int64, the label bytes, good;
    - b.tfrecord: three good records, then one cut off by the end of the file;
    - c.tfrecord: good, then a broken length CRC (and a good record after it, lost);
    - d.tfrecord: two good records, then 5 bytes: less than a record header;
    - e.tfrecord: two good records.
    """
    a = write_records(
        root / "a.tfrecord",
        [
            good(0),
            good(1),
            b"\x0a\xff\xff\xff",
            example_bytes([("image/class/label", 2)]),
            example_bytes([("image/encoded", IMAGES[4])]),
            example_bytes([("image/encoded", 5), ("image/class/label", 1)]),
            example_bytes([("image/encoded", IMAGES[6]), ("image/class/label", b"3")]),
            good(7),
        ],
    )
    found = {"a": offsets(a)}
    flip(a, found["a"][1] + 12 + 40)  # a byte of record 1's data
    b = write_records(root / "b.tfrecord", [good(i) for i in range(4)])
    found["b"] = offsets(b)
    b.write_bytes(b.read_bytes()[: found["b"][3] + 100])
    c = write_records(root / "c.tfrecord", [good(i) for i in range(3)])
    found["c"] = offsets(c)
    flip(c, found["c"][1] + 9)  # record 1's length CRC
    d = write_records(root / "d.tfrecord", [good(i) for i in range(2)])
    found["d"] = [*offsets(d), d.stat().st_size]
    d.write_bytes(d.read_bytes() + b"\x00" * 5)
    e = write_records(root / "e.tfrecord", [good(8), good(9)])
    found["e"] = offsets(e)
    return found


def test_scan_rejects_each_damaged_record(tmp_path: Path) -> None:
    """Each damaged record's row carries its reason; good records after a bad one are read."""
    found = damaged_source(tmp_path / "src")
    scan, rows = scan_all(tmp_path / "src", tmp_path / "work")
    a, b, c, d = found["a"], found["b"], found["c"], found["d"]
    size = {name: (tmp_path / f"src/{name}.tfrecord").stat().st_size for name in "bcd"}
    left_out = "; the rest of the file ({} bytes) is left out"
    expected = [  # (source, the reason's start, its end)
        (f"a.tfrecord:{a[1]}", "data CRC mismatch", ""),
        (f"a.tfrecord:{a[2]}", "not a tf.train.Example: ", ""),
        (f"a.tfrecord:{a[3]}", "no 'image/encoded' feature (the image)", ""),
        (f"a.tfrecord:{a[4]}", "no 'image/class/label' feature (the label)", ""),
        (
            f"a.tfrecord:{a[5]}",
            "feature 'image/encoded' (the image) holds 1 int64 value, expected one bytes value",
            "",
        ),
        (
            f"a.tfrecord:{a[6]}",
            "feature 'image/class/label' (the label) holds 1 bytes value, expected one int64 value",
            "",
        ),
        (
            f"b.tfrecord:{b[3]}",
            f"truncated: the file ends at byte {size['b']}, inside this record",
            left_out.format(size["b"] - b[3]),
        ),
        (f"c.tfrecord:{c[1]}", "length CRC mismatch", left_out.format(size["c"] - c[1])),
        (
            f"d.tfrecord:{d[2]}",
            f"truncated: the file ends at byte {size['d']}, inside this record",
            left_out.format(5),
        ),
    ]
    rejected = [
        (r.source.decode(), unpack_fields(r.fields)[WHOLE_SAMPLE]) for r in rows if r.size == 0
    ]
    assert [source for source, _ in rejected] == [source for source, _, _ in expected]
    for (_, value), (_, start, end) in zip(rejected, expected, strict=True):
        assert isinstance(value, InvalidValue)
        assert value.reason.startswith(start)
        assert value.reason.endswith(end)
    kept = [r for r in rows if r.size]
    assert [r.source.decode() for r in kept] == [
        f"a.tfrecord:{a[0]}",
        f"a.tfrecord:{a[7]}",
        *(f"b.tfrecord:{o}" for o in b[:3]),
        f"c.tfrecord:{c[0]}",
        *(f"d.tfrecord:{o}" for o in d[:2]),
        *(f"e.tfrecord:{o}" for o in found["e"]),
    ]
    kept_images = [0, 7, 0, 1, 2, 0, 0, 1, 8, 9]
    assert [image_bytes(scan, r) for r in kept] == [IMAGES[i] for i in kept_images]
    assert [r.label for r in kept] == [LABELS[i] for i in kept_images]


@pytest.mark.parametrize("workers", [1, 2])
def test_build_rejects_and_goes_on(tmp_path: Path, workers: int) -> None:
    """rejects.jsonl names each damaged record by file and offset; the rest is built."""
    found = damaged_source(tmp_path / "src")
    out = tmp_path / "out"
    summary = build(
        tmp_path / "src", out, BuildOptions(workers=workers, shard_size=4000, progress=False)
    )
    lines = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    a, b, c, d = found["a"], found["b"], found["c"], found["d"]
    assert [line["path"] for line in lines] == [
        *(f"a.tfrecord:{o}" for o in a[1:7]),
        f"b.tfrecord:{b[3]}",
        f"c.tfrecord:{c[1]}",
        f"d.tfrecord:{d[2]}",
    ]
    assert [line["reason"].split(":")[0].split(" (")[0] for line in lines] == [
        "data CRC mismatch",
        "not a tf.train.Example",
        "no 'image/encoded' feature",
        "no 'image/class/label' feature",
        "feature 'image/encoded'",
        "feature 'image/class/label'",
        "truncated",
        "length CRC mismatch",
        "truncated",
    ]
    assert all("field" not in line for line in lines)  # the record as a whole, not a field
    assert (summary.samples, summary.rejected) == (10, 9)


def test_strict_build_stops_at_the_first_damaged_record(tmp_path: Path) -> None:
    found = damaged_source(tmp_path / "src")
    strict = BuildOptions(workers=1, shard_size=4000, progress=False, strict=True)
    where = re.escape(f"a.tfrecord:{found['a'][1]}")
    with pytest.raises(
        BuildError, match=rf"^{where}: data CRC mismatch.*\(a strict build stops at a reject\)$"
    ):
        build(tmp_path / "src", tmp_path / "out", strict)


def test_a_file_that_is_not_tfrecord_is_rejected_whole(tmp_path: Path) -> None:
    """A JPEG renamed .tfrecord: its first 12 bytes are no record header."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src/x.tfrecord").write_bytes(IMAGES[0])
    write_records(tmp_path / "src/y.tfrecord", [good(1)])
    _, rows = scan_all(tmp_path / "src", tmp_path / "work")
    assert [(r.source.decode(), r.size) for r in rows] == [
        ("x.tfrecord:0", 0),
        ("y.tfrecord:0", len(IMAGES[1])),
    ]
    reason = unpack_fields(rows[0].fields)[WHOLE_SAMPLE].reason
    assert reason.startswith("length CRC mismatch")
    assert reason.endswith(f"; the rest of the file ({len(IMAGES[0])} bytes) is left out")
