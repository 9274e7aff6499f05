"""TFRecord shards (formats/SPEC.md sections 4.2 and 5.2): the framing and its masked CRC-32C,
the record shard writer (where each member lands, the Example's fixed order), damaged files,
DALI's index; TensorFlow (in a subprocess) and DALI as the readers and writers to agree with."""

from __future__ import annotations

import functools
import importlib
import io
import re
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import pytest
import zstandard
from fastpack.formats import (
    ChecksumMismatchError,
    FieldSpec,
    FieldValueError,
    Schema,
    ShardFormatError,
    TruncatedFileError,
    Zstd,
    read_records,
)
from fastpack.formats.example import Value, encode_example, parse_example, varint
from fastpack.formats.schema import V1_SCHEMA
from fastpack.formats.tfrecord import (
    FOOTER_BYTES,
    HEADER_BYTES,
    RecordProblem,
    RecordShardWriter,
    RecordSpan,
    WrittenSample,
    feature_name,
    format_record_index,
    image_size,
    mask,
    masked_crc32c,
    parse_record_index,
    record_header,
    scan_records,
    write_file,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from ..conftest import jpeg_bytes, png_bytes
from ._tf_interop import as_json, run_tf

Members = list[tuple[str, bytes]]
Features = dict[str, tuple[str, list[Any]]]

# ---- masked CRC-32C -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "crc"),
    [
        (b"123456789", 0xE3069283),  # the check value of CRC-32C
        (bytes(32), 0x8A9136AA),  # RFC 3720, B.4
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_crc32c_known_vectors(data: bytes, crc: int) -> None:
    assert google_crc32c.value(data) == crc


def test_mask_known_values() -> None:
    # 0xE3069283 rotated right by 15 is 0x2507C60D; plus 0xA282EAD8 is 0xC78AB0E5 (mod 2^32)
    assert mask(0xE3069283) == 0xC78AB0E5
    assert masked_crc32c(b"123456789") == 0xC78AB0E5
    assert mask(0) == 0xA282EAD8
    assert mask(1) == 0xA284EAD8  # 1 rotated right by 15 is 1 << 17
    assert mask(0x8000) == 0xA282EAD9  # bit 15 rotates to bit 0
    assert mask(0xFFFFFFFF) == 0xA282EAD7  # the sum wraps


def _unmask(masked: int) -> int:
    rotated = (masked - 0xA282EAD8) % 2**32
    return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF


@given(st.integers(0, 2**32 - 1))
def test_mask_is_a_32_bit_bijection(crc: int) -> None:
    assert 0 <= mask(crc) < 2**32
    assert _unmask(mask(crc)) == crc


def test_record_header() -> None:
    assert record_header(0) == bytes(8) + struct.pack("<I", masked_crc32c(bytes(8)))
    header = record_header(300)
    assert header[:8] == b"\x2c\x01" + bytes(6)
    assert struct.unpack("<I", header[8:]) == (mask(google_crc32c.value(header[:8])),)
    assert record_header(2**40)[:8] == struct.pack("<Q", 2**40)


def test_write_file_frames_each_payload() -> None:
    out = io.BytesIO()
    write_file(out, [b"abc", b""])
    abc = record_header(3) + b"abc" + struct.pack("<I", masked_crc32c(b"abc"))
    empty = record_header(0) + struct.pack("<I", masked_crc32c(b""))
    assert out.getvalue() == abc + empty
    assert list(scan_records(out.getvalue())) == [
        RecordSpan(0, 12, 3),
        RecordSpan(19, 31, 0),
    ]


# ---- the record shard writer ----------------------------------------------------------------

V2_SCHEMA = Schema(
    (
        FieldSpec(name="jpg", type="jpeg"),
        FieldSpec(name="cls", type="class"),
        FieldSpec(name="txt", type="text"),
        FieldSpec(name="seg.png", type="png", geometry="mask"),
        FieldSpec(
            name="boxes.npy",
            type="ndarray",
            optional=True,
            dtype="<f4",
            shape=(None, 4),
            geometry="boxes",
        ),
        FieldSpec(name="id", type="class", optional=True),
        FieldSpec(name="meta.json.zst", type="json", zstd=Zstd(level=3)),
    )
)
SIZES = [(40, 56), (64, 80), (33, 17), (100, 130)]  # (height, width) of each sample's JPEG
LABELS = [0, 7, -1, 2**40]


def _key(i: int) -> str:
    return f"{i:09d}"


@functools.cache
def _jpeg(i: int) -> bytes:
    return jpeg_bytes(*SIZES[i], seed=i)


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def v1_samples() -> list[Members]:
    return [[("jpg", _jpeg(i)), ("cls", str(LABELS[i]).encode())] for i in range(len(SIZES))]


def v2_samples() -> list[Members]:
    samples = []
    for i, (height, width) in enumerate(SIZES):
        members = [
            ("jpg", _jpeg(i)),
            ("cls", str(LABELS[i]).encode()),
            ("txt", ["a cat", "", "é" * 100, "x" * 20_000][i].encode()),
            ("seg.png", png_bytes(height, width, seed=i)),
        ]
        if i != 1:  # sample 1 lacks its boxes, sample 2 its id
            boxes = np.arange(4 * i, dtype="<f4").reshape(i, 4)
            members.append(("boxes.npy", _npy(boxes)))
        if i != 2:
            members.append(("id", str(1000 + i).encode()))
        meta = zstandard.ZstdCompressor(level=3).compress(b'{"i":%d}' % i)
        members.append(("meta.json.zst", meta))
        samples.append(members)
    return samples


def _write(
    schema: Schema, samples: Sequence[Members]
) -> tuple[bytes, RecordShardWriter, list[WrittenSample]]:
    out = io.BytesIO()
    writer = RecordShardWriter(out, schema)
    written = [writer.add_sample(_key(i), members) for i, members in enumerate(samples)]
    assert writer.finish() == len(out.getvalue())
    return out.getvalue(), writer, written


def _expected(schema: Schema, key: str, members: Members) -> Features:
    """The features of a sample's Example, in SPEC 4.2's order, from the table's rules."""
    present = dict(members)
    features: Features = {}
    image, label = schema.image_field, schema.label_field
    if image is not None and image in present:
        height, width = SIZES[int(key)]
        features["image/encoded"] = ("bytes", [present[image]])
        features["image/format"] = ("bytes", [b"jpeg"])
        features["image/height"] = ("int64", [height])
        features["image/width"] = ("int64", [width])
    if label is not None and label in present:
        features["image/class/label"] = ("int64", [int(present[label])])
    for name in schema.names:
        if name not in (image, label) and name in present:
            features[f"fastpack/{name}"] = ("bytes", [present[name]])
    features["fastpack/key"] = ("bytes", [key.encode()])
    return features


def _read_back(data: bytes, span: RecordSpan) -> Features:
    """The features of a record's Example, values read through the parser's spans."""
    parsed = parse_example(data, span.data_offset, span.data_offset + span.size)
    out: Features = {}
    for name, f in parsed.items():
        if f.kind == "bytes":
            out[name] = ("bytes", [data[s : s + n] for s, n in f.spans])
        else:
            out[name] = (f.kind, list(f.numbers))
    return out


def _spans(data: bytes) -> list[RecordSpan]:
    found = list(scan_records(data))
    assert all(isinstance(s, RecordSpan) for s in found), found
    return [s for s in found if isinstance(s, RecordSpan)]


@pytest.mark.parametrize("schema", [V1_SCHEMA, V2_SCHEMA], ids=["v1", "v2"])
def test_locations_point_at_the_member_bytes(schema: Schema) -> None:
    samples = v1_samples() if schema is V1_SCHEMA else v2_samples()
    data, _, written = _write(schema, samples)
    for i, (members, sample) in enumerate(zip(samples, written, strict=True)):
        assert [loc.name for loc in sample.locations] == [f"{_key(i)}.{f}" for f, _ in members]
        for (field, member), loc, stored in zip(
            members, sample.locations, sample.stored, strict=True
        ):
            assert loc.header_offset == sample.record_offset
            start = loc.data_offset
            assert data[start : start + loc.size] == stored
            assert sample.record_offset + HEADER_BYTES <= start
            assert start + loc.size <= sample.record_offset + sample.record_size - FOOTER_BYTES
            if field == "cls":  # the label is stored as the varint inside image/class/label
                assert stored == varint(int(member))
                assert data[start - 2 : start] == b"\x0a" + bytes([loc.size])  # packed list
                assert data[start + loc.size : start + loc.size + 1] in (b"\x0a", b"")
            else:
                assert stored == member


def test_the_label_varint_is_the_whole_int64_value() -> None:
    data, _, written = _write(V1_SCHEMA, v1_samples())
    sizes = [w.locations[1].size for w in written]
    assert sizes == [1, 1, 10, 6]  # 0, 7, -1 (two's complement), 2**40
    for label, sample, span in zip(LABELS, written, _spans(data), strict=True):
        loc = sample.locations[1]
        assert _read_back(data, span)["image/class/label"] == ("int64", [label])
        assert data[loc.data_offset : loc.data_offset + loc.size] == varint(label)


@pytest.mark.parametrize("schema", [V1_SCHEMA, V2_SCHEMA], ids=["v1", "v2"])
def test_records_tile_the_file_and_hold_the_spec_features(schema: Schema) -> None:
    samples = v1_samples() if schema is V1_SCHEMA else v2_samples()
    data, writer, written = _write(schema, samples)
    spans = _spans(data)
    assert writer.records == [(s.offset, s.end - s.offset) for s in spans]
    assert writer.records == [(w.record_offset, w.record_size) for w in written]
    ends = [0] + [offset + size for offset, size in writer.records]
    assert [offset for offset, _ in writer.records] == ends[:-1]
    assert ends[-1] == len(data)
    for i, (members, span) in enumerate(zip(samples, spans, strict=True)):
        expected = _expected(schema, _key(i), members)
        found = _read_back(data, span)
        assert list(found) == list(expected)  # SPEC 4.2's order
        assert found == expected


def test_one_v1_record_byte_for_byte() -> None:
    members = v1_samples()[1]
    data, _, _ = _write(V1_SCHEMA, [members])
    features: list[tuple[bytes, Value]] = [
        (b"image/encoded", _jpeg(1)),
        (b"image/format", b"jpeg"),
        (b"image/height", 64),
        (b"image/width", 80),
        (b"image/class/label", 7),
        (b"fastpack/key", b"000000000"),
    ]
    example = b"".join(bytes(p) for p in encode_example(features).parts)
    framed = io.BytesIO()
    write_file(framed, [example])
    assert data == framed.getvalue()


def test_image_and_label_come_first_whatever_the_schema_order() -> None:
    """SPEC 4.2: image features, label, the other fields in schema order, key; the locations
    follow the members."""
    schema = Schema(
        (
            FieldSpec(name="txt", type="text"),
            FieldSpec(name="cls", type="class"),
            FieldSpec(name="jpg", type="jpeg"),
            FieldSpec(name="seg.png", type="png"),
        )
    )
    seg = png_bytes(40, 56)
    members = [("txt", b"hello"), ("cls", b"-5"), ("jpg", _jpeg(0)), ("seg.png", seg)]
    data, _, (written,) = _write(schema, [members])
    found = _read_back(data, _spans(data)[0])
    assert list(found) == [
        "image/encoded",
        "image/format",
        "image/height",
        "image/width",
        "image/class/label",
        "fastpack/txt",
        "fastpack/seg.png",
        "fastpack/key",
    ]
    assert found == _expected(schema, _key(0), members)
    assert [loc.name for loc in written.locations] == [
        "000000000.txt",
        "000000000.cls",
        "000000000.jpg",
        "000000000.seg.png",
    ]
    stored = [data[loc.data_offset : loc.data_offset + loc.size] for loc in written.locations]
    assert stored == [b"hello", varint(-5), _jpeg(0), seg]


def test_a_schema_without_image_or_label() -> None:
    schema = Schema((FieldSpec(name="txt", type="text"), FieldSpec(name="bin", type="raw")))
    members = [("txt", "ü".encode()), ("bin", bytes(range(256)))]
    data, _, _ = _write(schema, [members])
    assert _read_back(data, _spans(data)[0]) == {
        "fastpack/txt": ("bytes", ["ü".encode()]),
        "fastpack/bin": ("bytes", [bytes(range(256))]),
        "fastpack/key": ("bytes", [b"000000000"]),
    }


def test_fixed_order_makes_writers_agree(tmp_path: Path) -> None:
    first, _, _ = _write(V2_SCHEMA, v2_samples())
    second, _, _ = _write(V2_SCHEMA, v2_samples())
    assert first == second
    with (tmp_path / "shard.tfrecord").open("wb") as f:
        writer = RecordShardWriter(f, V2_SCHEMA)
        for i, members in enumerate(v2_samples()):
            writer.add_sample(_key(i), members)
    assert (tmp_path / "shard.tfrecord").read_bytes() == first


@pytest.mark.parametrize("label", [-(2**63), 2**63 - 1])
def test_labels_at_the_ends_of_int64(label: int) -> None:
    data, _, (written,) = _write(V1_SCHEMA, [[("jpg", _jpeg(0)), ("cls", str(label).encode())]])
    loc = written.locations[1]
    assert data[loc.data_offset : loc.data_offset + loc.size] == varint(label)
    assert _read_back(data, _spans(data)[0])["image/class/label"] == ("int64", [label])


def test_a_known_size_skips_the_image_header() -> None:
    out = io.BytesIO()
    writer = RecordShardWriter(out, V1_SCHEMA)
    written = writer.add_sample("k", [("jpg", b"not a jpeg"), ("cls", b"1")], size=(3, 4))
    found = _read_back(out.getvalue(), _spans(out.getvalue())[0])
    assert (found["image/height"], found["image/width"]) == (("int64", [3]), ("int64", [4]))
    assert written.stored[0] == b"not a jpeg"


_ROUND_TRIP_SCHEMA = Schema(
    (
        FieldSpec(name="jpg", type="jpeg"),
        FieldSpec(name="cls", type="class"),
        FieldSpec(name="txt", type="text"),
        FieldSpec(name="bin", type="raw", optional=True),
    )
)


@given(
    st.lists(
        st.tuples(
            st.binary(max_size=300),
            st.integers(-(2**63), 2**63 - 1),
            st.binary(max_size=200),
            st.none() | st.binary(max_size=200),
        ),
        max_size=5,
    )
)
@settings(max_examples=60)
def test_written_samples_read_back(samples: list[tuple[bytes, int, bytes, bytes | None]]) -> None:
    """Any image bytes (of a known size), label, text and optional raw member."""
    out = io.BytesIO()
    writer = RecordShardWriter(out, _ROUND_TRIP_SCHEMA)
    written = []
    for i, (image, label, text, raw) in enumerate(samples):
        members = [("jpg", image), ("cls", str(label).encode()), ("txt", text)]
        members += [("bin", raw)] if raw is not None else []
        written.append((members, writer.add_sample(_key(i), members, size=(i + 1, 7))))
    data = out.getvalue()
    spans = _spans(data)
    assert [(s.offset, s.end - s.offset) for s in spans] == writer.records
    assert sum(size for _, size in writer.records) == len(data)
    for i, ((members, sample), span) in enumerate(zip(written, spans, strict=True)):
        for loc, stored in zip(sample.locations, sample.stored, strict=True):
            assert data[loc.data_offset : loc.data_offset + loc.size] == stored
        expected: Features = {
            "image/encoded": ("bytes", [members[0][1]]),
            "image/format": ("bytes", [b"jpeg"]),
            "image/height": ("int64", [i + 1]),
            "image/width": ("int64", [7]),
            "image/class/label": ("int64", [int(members[1][1])]),
        }
        expected.update({f"fastpack/{f}": ("bytes", [m]) for f, m in members[2:]})
        expected["fastpack/key"] = ("bytes", [_key(i).encode()])
        found = _read_back(data, span)
        assert (list(found), found) == (list(expected), expected)


def test_feature_names() -> None:
    assert feature_name(V1_SCHEMA, "jpg") == "image/encoded"
    assert feature_name(V1_SCHEMA, "cls") == "image/class/label"
    assert feature_name(V2_SCHEMA, "id") == "fastpack/id"  # not the first class field
    assert feature_name(V2_SCHEMA, "seg.png") == "fastpack/seg.png"


def test_image_size_reads_jpeg_and_png_headers() -> None:
    assert image_size(jpeg_bytes(37, 91), "jpeg") == (37, 91)
    assert image_size(png_bytes(23, 45), "png") == (23, 45)
    assert image_size(png_bytes(300, 2, alpha=True), "png") == (300, 2)


@pytest.mark.parametrize(
    ("data", "kind", "message"),
    [
        (b"\x89PNG\r\n\x1a\n", "png", r"not a PNG with its IHDR chunk first \(8 bytes"),
        (b"GIF89a" + bytes(30), "png", "not a PNG"),
        (png_bytes(4, 4)[:8] + bytes(4) + b"IDAT" + bytes(8), "png", "not a PNG"),
        (b"GIF89a" + bytes(30), "jpeg", "not a JPEG whose header reads"),
        (jpeg_bytes(8, 8)[:20], "jpeg", "not a JPEG whose header reads"),
    ],
    ids=["png signature only", "gif as png", "png without IHDR", "gif as jpeg", "cut jpeg"],
)
def test_image_size_refuses_other_bytes(data: bytes, kind: str, message: str) -> None:
    with pytest.raises(FieldValueError, match=message):
        image_size(data, kind)


@pytest.mark.parametrize(
    ("members", "error", "message"),
    [
        ([("jpg", b"GIF89a"), ("cls", b"1")], FieldValueError, "k1.jpg: not a JPEG"),
        ([("jpg", _jpeg(0)), ("cls", b"1.5")], FieldValueError, "k1.cls: a class member is"),
        ([("jpg", _jpeg(0)), ("cls", b" 7")], FieldValueError, "found b' 7'"),
        ([("jpg", _jpeg(0)), ("cls", b"1_000")], FieldValueError, "found b'1_000'"),
        ([("jpg", _jpeg(0)), ("cls", b"+3")], FieldValueError, "found b'\\+3'"),
        ([("jpg", _jpeg(0)), ("cls", b"")], FieldValueError, "found b''"),
        ([("jpg", _jpeg(0)), ("cls", b"9223372036854775808")], FieldValueError, "an int64"),
        ([("jpg", _jpeg(0)), ("cls", b"1"), ("txt", b"")], ShardFormatError, r"\['txt'\] are not"),
        ([("cls", b"1"), ("jpg", _jpeg(0))], ShardFormatError, "expected each field once in"),
        ([("jpg", _jpeg(0)), ("jpg", _jpeg(0))], ShardFormatError, "expected each field once"),
        ([("jpg", _jpeg(0))], ShardFormatError, r"required fields \['cls'\] are missing"),
    ],
    ids=[
        "not a jpeg",
        "label 1.5",
        "label with a space",
        "label 1_000",
        "label +3",
        "empty label",
        "label past int64",
        "unknown field",
        "schema order",
        "field twice",
        "required field missing",
    ],
)
def test_add_sample_refuses_bad_members(
    members: Members, error: type[Exception], message: str
) -> None:
    out = io.BytesIO()
    writer = RecordShardWriter(out, V1_SCHEMA)
    with pytest.raises(error, match=message):
        writer.add_sample("k1", members)
    assert out.getvalue() == b""
    assert writer.records == []


@pytest.mark.parametrize(
    ("key", "message"), [("a.b", "without '.'"), ("", "non-empty"), ("clé", "are ASCII")]
)
def test_add_sample_refuses_bad_keys(key: str, message: str) -> None:
    writer = RecordShardWriter(io.BytesIO(), V1_SCHEMA)
    with pytest.raises(ShardFormatError, match=message):
        writer.add_sample(key, v1_samples()[0])


# ---- damaged files --------------------------------------------------------------------------

PAYLOADS = [b"first" * 3, b"second record", b"third"]  # records at 0 (31 bytes), 31 (29), 60 (21)


def _file() -> bytes:
    out = io.BytesIO()
    write_file(out, PAYLOADS)
    assert len(out.getvalue()) == 81
    return out.getvalue()


def _flip(data: bytes, at: int, bit: int = 0) -> bytes:
    changed = bytearray(data)
    changed[at] ^= 1 << bit
    return bytes(changed)


def _problem(found: list[RecordSpan | RecordProblem]) -> RecordProblem:
    problems = [p for p in found if isinstance(p, RecordProblem)]
    assert len(problems) == 1, found
    return problems[0]


def test_an_intact_file_scans_to_its_records() -> None:
    assert list(scan_records(_file())) == [
        RecordSpan(0, 12, 15),
        RecordSpan(31, 43, 13),
        RecordSpan(60, 72, 5),
    ]
    assert RecordSpan(31, 43, 13).end == 60
    assert list(scan_records(b"")) == []


@pytest.mark.parametrize("at", [31 + 12, 31 + 12 + 12, 31 + 12 + 13, 31 + 12 + 16])
def test_a_flipped_bit_in_data_or_its_crc_is_resumable(at: int) -> None:
    """Inside the data (first and last byte), inside its CRC: the next record is still found."""
    data = _flip(_file(), at)
    found = list(scan_records(data))
    assert found[0] == RecordSpan(0, 12, 15)
    assert found[2] == RecordSpan(60, 72, 5)
    problem = found[1]
    assert isinstance(problem, RecordProblem)
    assert (problem.offset, problem.resumable) == (31, True)
    (stored,) = struct.unpack_from("<I", data, 31 + 12 + 13)
    computed = masked_crc32c(data[43:56])
    assert problem.reason == f"data CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
    assert list(scan_records(data, check_data=False)) == list(scan_records(_file()))


@pytest.mark.parametrize(("at", "bit"), [(31, 0), (31 + 7, 7), (31 + 8, 3), (31 + 11, 7)])
def test_a_flipped_bit_in_the_length_or_its_crc_stops_the_scan(at: int, bit: int) -> None:
    found = list(scan_records(_flip(_file(), at, bit)))
    assert found[0] == RecordSpan(0, 12, 15)
    assert len(found) == 2  # nothing after: the framing cannot be trusted
    problem = _problem(found)
    assert (problem.offset, problem.resumable) == (31, False)
    assert problem.reason.startswith("length CRC mismatch: stored 0x")


@pytest.mark.parametrize(
    ("data", "offset", "reason"),
    [
        (_file()[:36], 31, "truncated: 5 bytes left, a record header needs 12"),
        (_file()[:47], 31, "truncated: the record needs bytes up to 60, the file has 47"),
        (_file()[:79], 60, "truncated: the record needs bytes up to 81, the file has 79"),
        (_file() + bytes(3), 81, "truncated: 3 bytes left, a record header needs 12"),
        (record_header(2**40) + b"x", 0, f"truncated: the record needs bytes up to {2**40 + 16}"),
    ],
    ids=["header", "data", "footer", "trailing bytes", "a huge length"],
)
def test_truncated_records(data: bytes, offset: int, reason: str) -> None:
    found = list(scan_records(data))
    problem = _problem(found)
    assert found[-1] is problem
    assert (problem.offset, problem.resumable) == (offset, False)
    assert problem.reason.startswith(reason)


def test_every_single_bit_flip_is_found() -> None:
    data = _file()
    for at in range(len(data)):
        for bit in range(8):
            found = list(scan_records(_flip(data, at, bit)))
            assert any(isinstance(p, RecordProblem) for p in found), (at, bit)


def test_read_records_names_the_file_and_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "shard.tfrecord"
    path.write_bytes(_file())
    assert list(read_records(path)) == [(s, _file()) for s in _spans(_file())]
    path.write_bytes(_flip(_file(), 50))
    records = read_records(path)
    assert next(records)[0] == RecordSpan(0, 12, 15)
    where = re.escape(f"{path}: record at byte ")
    with pytest.raises(ChecksumMismatchError, match=rf"^{where}31: data CRC mismatch: stored"):
        next(records)
    path.write_bytes(_flip(_file(), 31))
    with pytest.raises(ChecksumMismatchError, match="record at byte 31: length CRC mismatch"):
        list(read_records(path))
    path.write_bytes(_file()[:75])
    with pytest.raises(TruncatedFileError, match=rf"^{where}60: truncated: .* the file has 75$"):
        list(read_records(path))


def test_garbage_in_a_record_is_a_shard_format_error() -> None:
    out = io.BytesIO()
    write_file(out, [b"\x0a\x05\x0a\x01"])  # intact framing, not an Example
    (span,) = _spans(out.getvalue())
    with pytest.raises(ShardFormatError, match=r"not a tf\.train\.Example: field 1 at byte 12"):
        parse_example(out.getvalue(), span.data_offset, span.data_offset + span.size)


# ---- DALI's index ---------------------------------------------------------------------------


def test_record_index_format() -> None:
    assert format_record_index([(0, 41410), (41410, 40219)]) == "0 41410\n41410 40219\n"
    assert format_record_index([]) == ""


@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))))
def test_record_index_round_trip(records: list[tuple[int, int]]) -> None:
    assert parse_record_index(format_record_index(records), "x.idx") == records


def test_record_index_of_a_shard() -> None:
    data, writer, _ = _write(V2_SCHEMA, v2_samples())
    text = format_record_index(writer.records)
    assert parse_record_index(text, "000000.idx") == [
        (s.offset, s.end - s.offset) for s in _spans(data)
    ]
    assert parse_record_index("0 31\r\n31 29", "a.idx") == [(0, 31), (31, 29)]
    assert parse_record_index(" 0\t31 \n", "a.idx") == [(0, 31)]


@pytest.mark.parametrize("line", ["1 2 3", "1", "a 2", "-1 2", "1 -2", "", "² 5", "0x10 5", "1,2"])
def test_record_index_refuses_a_bad_line(line: str) -> None:
    with pytest.raises(ShardFormatError) as caught:
        parse_record_index(f"0 31\n31 29\n{line}\n60 21\n", "shards/000000.idx")
    assert str(caught.value) == f"shards/000000.idx: line 3 is not '<offset> <size>': {line!r}"


def test_record_index_is_what_dalis_tfrecord2idx_writes(tmp_path: Path) -> None:
    tool = Path(sys.executable).parent / "tfrecord2idx"
    if not tool.exists():
        pytest.skip("DALI's tfrecord2idx is not installed")
    data, writer, _ = _write(V2_SCHEMA, v2_samples())
    (tmp_path / "s.tfrecord").write_bytes(data)
    # the tool tries TensorFlow first (3 s to import) and reads the same bytes without it
    without_tf = "import runpy, sys; sys.modules['tensorflow'] = None; sys.argv = sys.argv[1:]; "
    without_tf += "runpy.run_path(sys.argv[0], run_name='__main__')"
    args = [str(tool), str(tmp_path / "s.tfrecord"), str(tmp_path / "s.idx")]
    subprocess.run([sys.executable, "-c", without_tf, *args], check=True, capture_output=True)
    assert (tmp_path / "s.idx").read_text() == format_record_index(writer.records)


def test_dali_reads_a_record_shard(tmp_path: Path) -> None:
    """`fn.readers.tfrecord` (CPU only) with the written index: the stored JPEG bytes and
    labels, in order."""
    pytest.importorskip("nvidia.dali")
    fn: Any = importlib.import_module("nvidia.dali.fn")  # untyped: Any
    tfrec: Any = importlib.import_module("nvidia.dali.tfrecord")
    pipeline: Any = importlib.import_module("nvidia.dali.pipeline")

    samples = v1_samples()
    data, writer, _ = _write(V1_SCHEMA, samples)
    (tmp_path / "000000.tfrecord").write_bytes(data)
    (tmp_path / "000000.idx").write_text(format_record_index(writer.records))
    pipe = pipeline.Pipeline(batch_size=len(samples), num_threads=1, device_id=None)
    with pipe:
        out = fn.readers.tfrecord(
            path=[str(tmp_path / "000000.tfrecord")],
            index_path=[str(tmp_path / "000000.idx")],
            features={
                "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
                "image/height": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            },
            random_shuffle=False,
            name="reader",
        )
        pipe.set_outputs(out["image/encoded"], out["image/class/label"], out["image/height"])
    pipe.build()
    images, labels, heights = pipe.run()
    assert pipe.reader_meta("reader")["epoch_size"] == len(samples)
    assert [bytes(np.asarray(images.at(i))) for i in range(len(samples))] == [
        _jpeg(i) for i in range(len(samples))
    ]
    assert [int(np.asarray(labels.at(i))[0]) for i in range(len(samples))] == LABELS
    assert [int(np.asarray(heights.at(i))[0]) for i in range(len(samples))] == [h for h, _ in SIZES]


# ---- TensorFlow as the reference reader and writer ------------------------------------------

# Examples TensorFlow writes: all three kinds, several values, empty lists, an empty Example
TF_EXAMPLES: list[Features] = [
    {
        "image/encoded": ("bytes", [jpeg_bytes(20, 30, seed=9)]),
        "image/class/label": ("int64", [3]),
        "image/object/bbox/xmin": ("float", [0.125, 0.5, -1.5, 2.0**100]),
        "image/object/class/label": ("int64", [1, -7, 2**40, 0, -(2**63)]),
        "captions": ("bytes", [b"a cat", b"", "é".encode(), bytes(300)]),
        "empty/int64": ("int64", []),
        "empty/float": ("float", []),
        "empty/bytes": ("bytes", []),
    },
    {},
    {f"f{i:03d}": ("int64", [i, -3 * i]) if i % 2 else ("float", [i / 4, -i]) for i in range(60)},
    {"big": ("bytes", [bytes(range(256)) * 400])},
]
# Examples fastpack writes outside a shard: the corners of the encoding
EDGE_EXAMPLES: list[list[tuple[bytes, Value]]] = [
    [(b"e", b""), (b"n", -1), (b"m", -(2**63)), (b"x", 2**63 - 1)],
    [("ü/name".encode(), b"v" * 16_384), (b"k" * 200, 0)],
    [],
]
FRAMES = [b"", b"x", bytes(range(256)) * 2, bytes(70_000)]


@pytest.fixture(scope="module")
def tensorflow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every question this file asks TensorFlow, in one subprocess; the files it read or wrote."""
    tmp = tmp_path_factory.mktemp("tensorflow")
    v1, _, _ = _write(V1_SCHEMA, v1_samples())
    v2, _, _ = _write(V2_SCHEMA, v2_samples())
    edge = io.BytesIO()
    write_file(edge, [b"".join(bytes(p) for p in encode_example(e).parts) for e in EDGE_EXAMPLES])
    paths = {name: tmp / f"{name}.tfrecord" for name in ("v1", "v2", "edge", "tf", "frames")}
    for name, data in (("v1", v1), ("v2", v2), ("edge", edge.getvalue())):
        paths[name].write_bytes(data)
    job = {
        "read": [str(paths[name]) for name in ("v1", "v2", "edge")],
        "write": [{"path": str(paths["tf"]), "examples": [as_json(e) for e in TF_EXAMPLES]}],
        "frame": [{"path": str(paths["frames"]), "payloads": [p.hex() for p in FRAMES]}],
    }
    answer = run_tf(job, tmp)
    return {"answer": answer, "paths": paths}


@pytest.mark.parametrize("schema", [V1_SCHEMA, V2_SCHEMA], ids=["v1", "v2"])
def test_tensorflow_reads_record_shards(tensorflow: dict[str, Any], schema: Schema) -> None:
    v1 = schema is V1_SCHEMA
    samples = v1_samples() if v1 else v2_samples()
    records = tensorflow["answer"]["read"][0 if v1 else 1]
    assert len(records) == len(samples)
    for i, (members, record) in enumerate(zip(samples, records, strict=True)):
        expected = as_json(_expected(schema, _key(i), members))
        assert record["proto"] == expected
        assert record["parsed"] == {name: values for name, (_, values) in expected.items()}
        assert record["image_shape"] == [*SIZES[i], 3]  # the header's size is the pixels'


def test_tensorflow_reads_the_corners_of_the_encoding(tensorflow: dict[str, Any]) -> None:
    records = tensorflow["answer"]["read"][2]
    expected = [
        {name.decode(): ("int64", [v]) if isinstance(v, int) else ("bytes", [v]) for name, v in e}
        for e in EDGE_EXAMPLES
    ]
    assert [r["proto"] for r in records] == [as_json(e) for e in expected]
    assert [r["image_shape"] for r in records] == [None] * len(EDGE_EXAMPLES)


def test_records_tensorflow_wrote_read_back_equal(tensorflow: dict[str, Any]) -> None:
    data = tensorflow["paths"]["tf"].read_bytes()
    serialized = tensorflow["answer"]["write"][0]
    spans = _spans(data)  # both CRCs of every record check
    assert len(spans) == len(TF_EXAMPLES)
    assert spans[-1].end == len(data)
    assert spans[1].size == 0  # the empty Example
    for span, features, theirs in zip(spans, TF_EXAMPLES, serialized, strict=True):
        assert data[span.data_offset : span.data_offset + span.size].hex() == theirs
        assert _read_back(data, span) == features
    assert [s for s, _ in read_records(tensorflow["paths"]["tf"])] == spans


def test_tensorflow_frames_records_as_write_file_does(tensorflow: dict[str, Any]) -> None:
    out = io.BytesIO()
    write_file(out, FRAMES)
    assert tensorflow["paths"]["frames"].read_bytes() == out.getvalue()


def test_image_size_reads_a_frame_that_simplejpeg_cannot_name() -> None:
    """Sampling factors libjpeg-turbo has no name for (luma 1x4) made simplejpeg's header
    reader raise KeyError; the size comes from the frame header itself."""
    data = bytearray(jpeg_bytes(16, 24))
    sof = data.index(b"\xff\xc0")
    data[sof + 11] = 0x14  # the first component's sampling factors: 1x4
    assert image_size(bytes(data), "jpeg") == (16, 24)
    data[sof + 7 : sof + 9] = b"\0\0"
    with pytest.raises(FieldValueError, match=r"not a JPEG whose header reads .*empty image"):
        image_size(bytes(data), "jpeg")
