"""`tf.train.Example` encoding and parsing (formats/SPEC.md section 4.2): the fixed byte layout,
hand-computed; round trips; hostile bytes; and protobuf (TensorFlow's, in a subprocess) as the
reference for both directions."""

from __future__ import annotations

import random
import re
import struct
from typing import Any

import numpy as np
import pytest
from fastpack.formats import FieldValueError, ShardFormatError
from fastpack.formats.example import Buffer, Feature, Value, encode_example, parse_example, varint
from hypothesis import given, settings
from hypothesis import strategies as st

from ._tf_interop import Example, as_json, run_tf

_INT64 = st.integers(-(2**63), 2**63 - 1)


def _ld(tag: int, body: bytes) -> bytes:
    """A length-delimited protobuf field: one tag byte, the length as a varint, the body."""
    return bytes([tag]) + varint(len(body)) + body


def _entry(name: bytes, feature: bytes) -> bytes:
    """A map entry of Features.feature: key = 1, value = 2."""
    return _ld(0x0A, _ld(0x0A, name) + _ld(0x12, feature))


def _reference(features: list[tuple[bytes, Value]]) -> bytes:
    """SPEC 4.2's grammar, written out again: the bytes `encode_example` must produce."""
    entries = b""
    for name, value in features:
        if isinstance(value, int):
            feature = _ld(0x1A, _ld(0x0A, varint(value)))
        else:
            feature = _ld(0x0A, _ld(0x0A, bytes(value)))
        entries += _entry(name, feature)
    return _ld(0x0A, entries)


def _joined(features: list[tuple[bytes, Value]]) -> tuple[bytes, list[tuple[int, int]]]:
    encoded = encode_example(features)
    data = b"".join(bytes(p) for p in encoded.parts)
    assert len(data) == encoded.size
    return data, encoded.spans


def _values(data: Buffer, features: dict[str, Feature]) -> Example:
    """A parsed Example as `{name: [kind, values]}` (bytes as hex), values read via spans."""
    out: Example = {}
    for name, f in features.items():
        if f.kind == "bytes":
            assert f.numbers == []
            out[name] = ["bytes", [bytes(data[s : s + n]).hex() for s, n in f.spans]]
        else:
            assert f.spans == []
            out[name] = [f.kind, list(f.numbers)]
    return out


# ---- the byte layout, by hand ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16383, "ff7f"),
        (16384, "808001"),
        (2**63 - 1, "ff" * 8 + "7f"),
        (-1, "ff" * 9 + "01"),
        (-2, "fe" + "ff" * 8 + "01"),
        (-(2**63), "80" * 9 + "01"),
    ],
)
def test_varint(value: int, encoded: str) -> None:
    assert varint(value).hex() == encoded


def test_one_bytes_and_one_int64_feature_byte_for_byte() -> None:
    value = b"xyz"
    encoded = encode_example([(b"a", value), (b"n", 5)])
    expected = bytes.fromhex(
        "0a1a"  # Example.features, 26 bytes
        "0a0c" "0a0161" "1207" "0a05" "0a03" "78797a"  # entry "a": BytesList [b"xyz"]
        "0a0a" "0a016e" "1205" "1a03" "0a01" "05"  # entry "n": Int64List packed [5]
    )  # fmt: skip
    assert b"".join(encoded.parts) == expected
    assert encoded.size == 28
    assert encoded.spans == [(13, 3), (27, 1)]
    assert expected[13:16] == b"xyz"
    assert expected[27:28] == b"\x05"
    assert len(encoded.parts) == 1  # small pieces are joined


def test_a_large_value_is_a_part_of_its_own_never_copied() -> None:
    image = bytes(range(256)) * 8  # over the 1 KiB copied into neighbouring parts
    encoded = encode_example([(b"image", image), (b"n", 5), (b"key", b"000000001")])
    assert sum(p is image for p in encoded.parts) == 1
    assert len(encoded.parts) == 3  # header, the value, the rest
    joined = b"".join(encoded.parts)
    offset, size = encoded.spans[0]
    assert joined[offset : offset + size] == image


def test_empty_bytes_value() -> None:
    encoded = encode_example([(b"e", b"")])
    expected = bytes.fromhex("0a0b" "0a09" "0a0165" "1204" "0a02" "0a00")  # fmt: skip
    assert b"".join(encoded.parts) == expected
    assert encoded.spans == [(13, 0)]
    assert parse_example(expected)["e"].spans == [(13, 0)]


def test_negative_int64_is_a_ten_byte_varint() -> None:
    data, spans = _joined([(b"label", -3)])
    assert spans == [(len(data) - 10, 10)]
    assert data[-12:].hex() == "0a0a" + "fd" + "ff" * 8 + "01"  # packed list of 10 bytes
    assert data == _reference([(b"label", -3)])
    assert parse_example(data)["label"].numbers == [-3]


@pytest.mark.parametrize("size", [127, 128, 300, 16383, 16384, 70_000])
def test_long_values_take_multi_byte_lengths(size: int) -> None:
    value = bytes(range(256)) * (size // 256) + bytes(size % 256)
    data, spans = _joined([(b"v", value), (b"k", 1)])
    (start, length), _ = spans
    assert (length, data[start : start + length]) == (size, value)
    assert data[start - 1 - len(varint(size)) : start] == b"\x0a" + varint(size)
    assert data == _reference([(b"v", value), (b"k", 1)])
    if size >= 128:
        assert len(varint(size)) > 1


def test_long_names_and_many_features() -> None:
    name = "é".encode() * 100  # 200 bytes: a two-byte length
    features: list[tuple[bytes, Value]] = [(name, b"x")]
    features += [(f"f{i}".encode(), i * 1000) for i in range(200)]
    data, _ = _joined(features)
    assert data == _reference(features)
    assert data[:3] == b"\x0a" + varint(len(data) - 3)  # the whole message: a 2-byte length
    parsed = parse_example(data)
    assert list(parsed) == [n.decode() for n, _ in features]
    assert parsed["f199"].numbers == [199_000]


def test_views_are_counted_in_bytes() -> None:
    """A memoryview of uint16s has len() 3 but 6 bytes: the length must say 6."""
    array = np.array([1, 2, 0xFFFF], dtype="<u2")
    features: list[tuple[bytes, Value]] = [(b"m", array.data), (b"b", bytearray(b"ab"))]
    data, spans = _joined(features)
    assert data == _reference([(b"m", array.tobytes()), (b"b", b"ab")])
    assert [data[s : s + n] for s, n in spans] == [array.tobytes(), b"ab"]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64])
def test_ints_outside_int64_are_refused(value: int) -> None:
    with pytest.raises(FieldValueError, match=rf"feature b'n': {value} is outside int64"):
        encode_example([(b"n", value)])


# ---- round trips ----------------------------------------------------------------------------

_FEATURES = st.lists(
    st.tuples(st.text(max_size=12).map(str.encode), st.binary(max_size=300) | _INT64),
    max_size=8,
    unique_by=lambda f: f[0],
)


@given(_FEATURES, st.binary(max_size=20), st.binary(max_size=20))
@settings(max_examples=300)
def test_parse_gives_back_what_was_encoded(
    features: list[tuple[bytes, Value]], before: bytes, after: bytes
) -> None:
    data, spans = _joined(features)
    assert data == _reference(features)
    buffer = before + data + after  # spans are offsets in the buffer handed to the parser
    parsed = parse_example(memoryview(buffer), len(before), len(before) + len(data))
    assert list(parsed) == [name.decode() for name, _ in features]
    for (name, value), (start, size) in zip(features, spans, strict=True):
        feature = parsed[name.decode()]
        if isinstance(value, int):
            assert (feature.kind, feature.numbers, feature.spans) == ("int64", [value], [])
            assert buffer[len(before) + start : len(before) + start + size] == varint(value)
        else:
            assert (feature.kind, feature.numbers) == ("bytes", [])
            assert feature.spans == [(len(before) + start, size)]
            assert buffer[len(before) + start :][:size] == value


@given(st.binary(max_size=200))
@settings(max_examples=500)
def test_random_bytes_parse_or_raise_shard_format_error(data: bytes) -> None:
    try:
        features = parse_example(data)
    except ShardFormatError:
        return  # the messages are checked below, on known garbage
    for f in features.values():  # what it did parse lies inside the data
        assert all(s >= 0 and s + n <= len(data) for s, n in f.spans)


def test_every_proper_prefix_is_refused() -> None:
    data, _ = _joined([(b"a", b"xyz" * 50), (b"n", -5), (b"e", b"")])
    for end in range(1, len(data)):
        with pytest.raises(ShardFormatError, match="runs past its message"):
            parse_example(data, 0, end)


# ---- any valid Example, and garbage ---------------------------------------------------------

_BYTES = 0x0A  # Feature.bytes_list, and the value field of every list
_FLOATS = 0x12
_INTS = 0x1A
# valid Examples that fastpack does not write, with what protobuf reads in them
VALID: dict[str, tuple[bytes, Example]] = {
    "unpacked int64": (
        _ld(0x0A, _entry(b"n", _ld(_INTS, b"\x08\x05\x08\x7f" + _ld(0x0A, b"\x01")))),
        {"n": ["int64", [5, 127, 1]]},
    ),
    "unpacked and packed floats": (
        _ld(
            0x0A,
            _entry(
                b"f",
                _ld(
                    _FLOATS,
                    b"\x0d" + struct.pack("<f", 1.5) + _ld(0x0A, struct.pack("<2f", -2, 0.25)),
                ),
            ),
        ),
        {"f": ["float", [1.5, -2.0, 0.25]]},
    ),
    "several values": (
        _ld(0x0A, _entry(b"b", _ld(_BYTES, _ld(0x0A, b"x") + _ld(0x0A, b"") + _ld(0x0A, b"yz")))),
        {"b": ["bytes", ["78", "", "797a"]]},
    ),
    # (no unknown field inside a map entry: upb moves such an entry to the unknown fields)
    "value before key, unknown fields": (
        b"\x10\x05"
        + _ld(
            0x0A,
            b"\x18\x01"
            + _ld(0x0A, _ld(0x12, _ld(_BYTES, _ld(0x0A, b"x"))) + _ld(0x0A, b"k"))
            + b"\x21"
            + bytes(8)
            + b"\x2d"
            + bytes(4),
        ),
        {"k": ["bytes", ["78"]]},
    ),
    "two Features messages are merged": (
        _ld(0x0A, _entry(b"a", _ld(_BYTES, _ld(0x0A, b"x"))))
        + _ld(0x0A, _entry(b"b", _ld(_INTS, _ld(0x0A, b"\x03")))),
        {"a": ["bytes", ["78"]], "b": ["int64", [3]]},
    ),
    "a repeated key: the last entry wins": (
        _ld(
            0x0A,
            _entry(b"a", _ld(_BYTES, _ld(0x0A, b"x")))
            + _entry(b"a", _ld(_INTS, _ld(0x0A, b"\x07"))),
        ),
        {"a": ["int64", [7]]},
    ),
    "a list given twice is merged": (
        _ld(0x0A, _entry(b"a", _ld(_BYTES, _ld(0x0A, b"x")) + _ld(_BYTES, _ld(0x0A, b"y")))),
        {"a": ["bytes", ["78", "79"]]},
    ),
    "a Feature given twice is merged": (
        _ld(
            0x0A,
            _ld(
                0x0A,
                _ld(0x0A, b"a")
                + _ld(0x12, _ld(_BYTES, _ld(0x0A, b"x")))
                + _ld(0x12, _ld(_BYTES, _ld(0x0A, b"y"))),
            ),
        ),
        {"a": ["bytes", ["78", "79"]]},
    ),
    "oneof: a later kind replaces the earlier": (
        _ld(0x0A, _entry(b"a", _ld(_BYTES, _ld(0x0A, b"x")) + _ld(_INTS, _ld(0x0A, b"\x03")))),
        {"a": ["int64", [3]]},
    ),
    "an entry without a key is named ''": (
        _ld(0x0A, _ld(0x0A, _ld(0x12, _ld(_BYTES, _ld(0x0A, b"x"))))),
        {"": ["bytes", ["78"]]},
    ),
    "a Feature with no kind": (_ld(0x0A, _entry(b"a", b"")), {}),
    "empty lists": (
        _ld(
            0x0A,
            _entry(b"b", _ld(_BYTES, b""))
            + _entry(b"i", _ld(_INTS, b""))
            + _entry(b"f", _ld(_FLOATS, _ld(0x0A, b""))),
        ),
        {"b": ["bytes", []], "i": ["int64", []], "f": ["float", []]},
    ),
    "an int64 varint with bits past the 64th": (
        _ld(0x0A, _entry(b"n", _ld(_INTS, b"\x08" + b"\xff" * 9 + b"\x7f"))),
        {"n": ["int64", [-1]]},
    ),
    "values of another wire type are unknown fields": (
        _ld(
            0x0A,
            _entry(b"b", _ld(_BYTES, b"\x08\x01" + _ld(0x0A, b"x")))
            + _entry(b"i", _ld(_INTS, b"\x0d" + bytes(4) + b"\x08\x02"))
            + _entry(b"f", _ld(_FLOATS, b"\x08\x01" + b"\x11" + bytes(8))),
        ),
        {"b": ["bytes", ["78"]], "i": ["int64", [2]], "f": ["float", []]},
    ),
    "an empty Example": (b"", {}),
}

GARBAGE: dict[str, tuple[bytes, str]] = {
    "truncated varint": (b"\x0a\x80", r"the varint at byte 1 runs past its message \(ends at 2\)"),
    "length past the end": (b"\x0a\x05\x0a", r"field 1 at byte 0 runs past its message to 7 > 3"),
    "an eleven-byte varint": (
        b"\x08" + b"\xff" * 10 + b"\x01",
        "at byte 1 is longer than 10 bytes",
    ),
    "field number 0": (b"\x00\x00", "tag 0 at byte 0: field numbers are 1 to 2\\^29 - 1"),
    "start group": (b"\x0b\x0c", "wire type 3"),
    "wire type 7": (b"\x0f", "wire type 7"),
    "fixed64 past the end": (b"\x09\x00\x00", "field 1 at byte 0 runs past its message to 9 > 3"),
    "name not UTF-8": (_ld(0x0A, _entry(b"\xff", _ld(_BYTES, b""))), "can't decode byte 0xff"),
    "packed floats of 3 bytes": (
        _ld(0x0A, _entry(b"f", _ld(_FLOATS, _ld(0x0A, b"abc")))),
        "packed floats at byte 13 are 3 bytes, not a multiple of 4",
    ),
    "a tag past 32 bits": (b"\x80\x80\x80\x80\x10\x00", "tag 4294967296 at byte 0: field numbers"),
    "an entry running past its Features": (
        b"\x0a\x03\x0a\x05\x0a",
        "field 1 at byte 2 runs past its message to 9 > 5",
    ),
}


@pytest.mark.parametrize(("data", "expected"), VALID.values(), ids=VALID.keys())
def test_any_valid_example_is_read(data: bytes, expected: Example) -> None:
    assert _values(data, parse_example(data)) == expected


@pytest.mark.parametrize(("data", "message"), GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_raises_shard_format_error(data: bytes, message: str) -> None:
    with pytest.raises(ShardFormatError, match=f"^not a tf.train.Example: .*{message}"):
        parse_example(data)


@pytest.mark.parametrize(("start", "stop"), [(-1, 2), (3, 2), (0, 5)])
def test_a_span_outside_the_data_is_refused(start: int, stop: int) -> None:
    with pytest.raises(ShardFormatError, match=f"Example span {start}..{stop} is outside the 4"):
        parse_example(b"\x0a\x02\x0a\x00", start, stop)


# ---- protobuf as the reference (TensorFlow in a subprocess) --------------------------------

# one-feature Examples: protobuf's serialization of each is unique, and must be fastpack's
SINGLE: list[tuple[bytes, Value]] = [
    (b"image/encoded", b"\xff\xd8\xff" + bytes(range(256)) * 2),
    (b"e", b""),
    (b"image/class/label", 0),
    (b"n", 1),
    (b"n", 300),
    (b"n", -1),
    (b"n", -(2**63)),
    (b"n", 2**63 - 1),
    ("fastpack/é".encode(), b"v" * 16_384),
    (b"k" * 130, b"long name"),
]
# Examples protobuf writes that fastpack does not: several values, floats, many features
SERIALIZED: list[dict[str, tuple[str, list[Any]]]] = [
    {
        "image/encoded": ("bytes", [b"\xff\xd8abc"]),
        "image/object/bbox/xmin": ("float", [0.25, 0.5, -1.5, 2.0**100]),  # float32 values
        "image/object/class/label": ("int64", [1, -7, 2**40, 0]),
        "captions": ("bytes", [b"a cat", b"", "é".encode()]),
        "empty/int64": ("int64", []),
        "empty/float": ("float", []),
        "empty/bytes": ("bytes", []),
    },
    {f"f{i:03d}": ("int64" if i % 3 else "float", [i, i + 1]) for i in range(50)},
]


def _random_examples(count: int) -> list[list[tuple[bytes, Value]]]:
    rng = random.Random(4)
    examples: list[list[tuple[bytes, Value]]] = []
    for _ in range(count):
        names = {bytes(rng.choices(b"abcdefgh/_", k=rng.randint(0, 6))) for _ in range(5)}
        examples.append(
            [
                (
                    name,
                    rng.randbytes(rng.choice([0, 1, 127, 128, 1000]))
                    if rng.random() < 0.5
                    else rng.randint(-(2**63), 2**63 - 1),
                )
                for name in sorted(names)
            ]
        )
    return examples


RANDOM = _random_examples(40)


def _mutants(count: int) -> list[bytes]:
    """Valid Examples with a few bytes changed, dropped or inserted."""
    rng = random.Random(5)
    seeds = [_joined(features)[0] for features in RANDOM] + [d for d, _ in VALID.values() if d]
    mutants = []
    for _ in range(count):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            at, op = rng.randrange(len(data)), rng.random()
            if op < 0.5:
                data[at] = rng.randrange(256)
            elif op < 0.75:
                del data[at]
            else:
                data.insert(at, rng.randrange(256))
        mutants.append(bytes(data))
    return mutants


MUTANTS = _mutants(3000)


@pytest.fixture(scope="module")
def protobuf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Everything this file asks protobuf, in one TensorFlow subprocess."""
    single = [as_json({n.decode(): _kind_values(v)}) for n, v in SINGLE]
    parse = [d for d, _ in VALID.values()] + [d for d, _ in GARBAGE.values()]
    parse += [_joined(features)[0] for features in RANDOM] + MUTANTS
    job = {
        "serialize": single + [as_json(e) for e in SERIALIZED],
        "parse": [d.hex() for d in parse],
    }
    return run_tf(job, tmp_path_factory.mktemp("protobuf"))


def _kind_values(value: Value) -> tuple[str, list[Any]]:
    return ("int64", [value]) if isinstance(value, int) else ("bytes", [bytes(value)])


def test_protobuf_serializes_one_feature_as_fastpack_does(protobuf: dict[str, Any]) -> None:
    for (name, value), theirs in zip(SINGLE, protobuf["serialize"], strict=False):
        assert _joined([(name, value)])[0].hex() == theirs, name


def test_examples_protobuf_serialized_read_back_equal(protobuf: dict[str, Any]) -> None:
    serialized = protobuf["serialize"][len(SINGLE) :]
    assert len(serialized) == len(SERIALIZED)
    for features, data in zip(SERIALIZED, serialized, strict=True):
        raw = bytes.fromhex(data)
        assert _values(raw, parse_example(raw)) == as_json(features)


def test_parse_example_reads_what_protobuf_reads(protobuf: dict[str, Any]) -> None:
    answers = protobuf["parse"]
    assert len(answers) == len(VALID) + len(GARBAGE) + len(RANDOM) + len(MUTANTS)
    for (name, (_, expected)), answer in zip(VALID.items(), answers, strict=False):
        assert "error" not in answer, (name, answer)
        theirs = {n: f for n, f in answer["example"].items() if f[0] != "none"}
        assert theirs == expected, name
    for features, answer in zip(RANDOM, answers[len(VALID) + len(GARBAGE) :], strict=False):
        data = _joined(features)[0]
        assert _values(data, parse_example(data)) == answer["example"]


# garbage protobuf still reads (as unknown fields or skipped data); fastpack refuses it
_STRICTER = ("start group",)


def test_protobuf_reads_what_this_file_calls_garbage_only_where_fastpack_is_stricter(
    protobuf: dict[str, Any],
) -> None:
    answers = protobuf["parse"][len(VALID) : len(VALID) + len(GARBAGE)]
    accepted = {name for name, a in zip(GARBAGE, answers, strict=True) if "error" not in a}
    assert accepted <= set(_STRICTER)


def test_damaged_examples_are_refused_where_protobuf_refuses_them(
    protobuf: dict[str, Any],
) -> None:
    """Both parsers refuse the same mutants, but for groups (wire types 3 and 4), which
    protobuf skips as unknown fields. (What both accept can differ: upb drops a map entry that
    holds an unknown field, which protobuf's other parsers keep.)"""
    answers = protobuf["parse"][-len(MUTANTS) :]
    outcomes = []
    for data, answer in zip(MUTANTS, answers, strict=True):
        try:
            parse_example(data)
            problem = ""
        except ShardFormatError as e:
            problem = str(e)
        outcomes.append(bool(problem))
        if problem and not re.search("wire type [34]", problem):
            assert "error" in answer, (data.hex(), problem, answer)
        elif not problem:
            assert "error" not in answer, (data.hex(), answer)
    assert 1000 < sum(outcomes) < len(MUTANTS) - 300  # the mutants exercise both outcomes
