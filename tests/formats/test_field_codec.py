"""Member bytes of each field type: the canonical encoding of a value, the value read back, and the
`FieldValueError` (with its reason) for a value that does not fit its field or bytes that do not
decode."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import zstandard
from fastpack.formats import FieldSpec, FieldValueError, Zstd, decode_value, encode_value
from fastpack.formats.field_codec import FieldCodec, train_dictionary

from ._golden_v2 import JPEG, caption
from ._v2 import spec

BOXES = spec("boxes.npy", "ndarray", dtype="<f4", shape=(None, 4), geometry="boxes")
CLASS = spec("cls", "class")
IDS = spec("tags.json", "class_ids")
TEXT = spec("txt", "text")
JSON = spec("meta.json", "json")
PNG = spec("seg.png", "png")
JPG = spec("jpg", "jpeg")
INT32 = spec("a.npy", "ndarray", dtype="<i4")


@pytest.mark.parametrize(
    ("field", "value", "member"),
    [
        (CLASS, 7, b"7"),
        (CLASS, np.int64(-3), b"-3"),
        (CLASS, " 12 ", b"12"),
        (CLASS, b"5", b"5"),
        (IDS, [3, 1, 2], b"[3,1,2]"),
        (IDS, np.array([4, 5]), b"[4,5]"),
        (IDS, "1 2 3", b"[1,2,3]"),
        (IDS, [], b"[]"),
        (IDS, b"[ 1, 2 ]", b"[1,2]"),
        (TEXT, "é ✓", "é ✓".encode()),
        (TEXT, b"bytes", b"bytes"),
        (JSON, {"b": [1, 2.5, None], "a": "é"}, '{"b":[1,2.5,null],"a":"é"}'.encode()),
        (JSON, b'{"kept": "as written"}', b'{"kept": "as written"}'),
        (PNG, b"\x89PNG\r\n\x1a\nrest", b"\x89PNG\r\n\x1a\nrest"),
        (JPG, JPEG, JPEG),
        (spec("bin", "raw"), b"", b""),
    ],
)  # fmt: skip
def test_canonical_members(field: FieldSpec, value: Any, member: bytes) -> None:
    assert encode_value(field, value) == member


def _npy(array: Any) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def test_arrays_are_npy_of_the_spec_dtype() -> None:
    member = encode_value(BOXES, [[1, 2, 3, 4]])
    assert member == _npy(np.array([[1, 2, 3, 4]], "<f4"))
    back = decode_value(BOXES, member)
    assert (back.dtype, back.shape, back.tolist()) == (np.dtype("<f4"), (1, 4), [[1, 2, 3, 4]])
    empty = decode_value(BOXES, encode_value(BOXES, []))
    assert (empty.dtype, empty.shape) == (np.dtype("<f4"), (0, 4))
    assert decode_value(INT32, encode_value(INT32, np.array([-1, 2**31 - 1]))).dtype == "<i4"
    assert decode_value(INT32, _npy(np.array([7], "<i8"))).dtype == "<i8"  # as stored
    scalar = spec("x.npy", "ndarray", shape=())
    assert decode_value(scalar, encode_value(scalar, np.float32(2.5))).shape == ()
    anything = spec("x.npy", "ndarray")
    fortran = np.asfortranarray(np.arange(6).reshape(2, 3))
    assert encode_value(anything, fortran) == _npy(np.arange(6).reshape(2, 3))
    assert decode_value(anything, encode_value(anything, np.eye(2, dtype="<f2"))).dtype == "<f2"
    assert encode_value(BOXES, _npy(np.zeros((2, 4), "<f8"))) == _npy(np.zeros((2, 4), "<f4"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (BOXES, [[1, 2, 3]], r"array of shape \(1, 3\), expected \(N, 4\)"),
        (BOXES, [1, 2, 3, 4], r"array of shape \(4,\), expected \(N, 4\)"),
        (BOXES, [[0, 0, 1, float("inf")]], "boxes hold a value that is not finite"),
        (BOXES, [[0, 0, 1, float("nan")]], "boxes hold a value that is not finite"),
        (BOXES, [[1, 2], [1, 2, 3]], "not an array: setting an array element with a sequence"),
        (BOXES, [["a", "b", "c", "d"]], "array of dtype <U1, expected a number type"),
        (BOXES, b"not npy", r"not an \.npy array"),
        (INT32, [1.5], "array of dtype float64 does not cast to int32"),
        (INT32, [2**40], "array of dtype int64 loses values as int32"),
        (spec("a.npy", "ndarray", dtype="|u1"), [-1], "array of dtype int64 loses values as uint8"),
        (spec("a.npy", "ndarray", dtype="<f2"), [0.1], "array of dtype float64 loses values as fl"),
        (spec("a.npy", "ndarray", dtype="|b1"), [2], "array of dtype int64 does not cast to bool"),
        (spec("a.npy", "ndarray", shape=(2, 3)), np.zeros((3, 2)), r"expected \(2, 3\)"),
        (CLASS, "cat", "the class is not an integer: 'cat'"),
        (CLASS, True, "the class is not an integer: True"),
        (CLASS, 1.0, "the class is not an integer: 1.0"),
        (CLASS, "٣", "the class is not an integer: '٣'"),
        (IDS, [1, "x"], "class id 1 is not an integer: 'x'"),
        (IDS, [1, False], "class id 1 is not an integer: False"),
        (IDS, 5, "class ids are a list of integers, found 5"),
        (IDS, b"[1,", r"not valid JSON \(Expecting value at byte 3\)"),
        (TEXT, b"caf\xe9", r"text is not UTF-8 \(unexpected end of data at byte 3\)"),
        (TEXT, b"\xffok", r"text is not UTF-8 \(invalid start byte at byte 0\)"),
        (TEXT, "\ud800", r"text is not valid Unicode \(surrogates not allowed\)"),
        (TEXT, 5, "text is a string, found int"),
        (JSON, b"{", r"not valid JSON \(Expecting property name enclosed in double quotes at by"),
        (JSON, b"\xff", "text is not UTF-8"),
        (JSON, {1, 2}, r"not representable as JSON \(Object of type set is not JSON serializ"),
        (JSON, float("nan"), r"not representable as JSON \(Out of range float values"),
        (PNG, b"GIF89a..", r"not a PNG \(it starts with b'GIF89a..'\)"),
        (PNG, JPEG, r"not a PNG \(it starts with b'\\xff\\xd8"),
        (PNG, "seg.png", "a png value is bytes, found str"),
        (JPG, b"\x89PNG\r\n\x1a\n", r"not a JPEG \(it starts with b'\\x89PNG"),
        (spec("bin", "raw"), "text", "a raw value is bytes, found str"),
    ],
)  # fmt: skip
def test_values_that_do_not_fit(field: FieldSpec, value: Any, message: str) -> None:
    with pytest.raises(FieldValueError, match=message):
        encode_value(field, value)


@pytest.mark.parametrize(
    ("field", "member", "message"),
    [
        (CLASS, b"x", r"a class member that does not decode \(expected ASCII -\?\[0-9\]\+"),
        (CLASS, b" 7 ", r"does not decode \(expected ASCII -\?\[0-9\]\+, found b' 7 '\)"),
        (CLASS, b"1_0", "a class member that does not decode"),
        (CLASS, b"+3", "a class member that does not decode"),
        (CLASS, b"9" * 30, "a class member that does not decode"),
        (IDS, b'["a"]', r"a class_ids member that does not decode \(class id 0 is not an int"),
        (IDS, b"[1.5]", "class id 0 is not an integer: 1.5"),
        (IDS, b'"1 2"', "a class_ids member that does not decode"),
        (IDS, b"[", "a class_ids member that does not decode"),
        (TEXT, b"\xff", r"a text member that does not decode \('utf-8' codec can't decode"),
        (JSON, b"{", "a json member that does not decode"),
        (BOXES, b"\x93NUMPY", r"a ndarray member that does not decode \(not an \.npy array"),
    ],
)  # fmt: skip
def test_members_that_do_not_decode(field: FieldSpec, member: bytes, message: str) -> None:
    with pytest.raises(FieldValueError, match=message):
        decode_value(field, member)


def test_decoded_types() -> None:
    assert decode_value(CLASS, b"-4") == -4
    assert isinstance(decode_value(CLASS, b"-4"), np.int64)
    ids = decode_value(IDS, b"[]")
    assert (ids.dtype, ids.shape) == (np.dtype(np.int64), (0,))
    assert decode_value(TEXT, memoryview(b"\xc3\xa9")) == "é"
    assert decode_value(JSON, b"[1, {}]") == [1, {}]
    assert decode_value(PNG, memoryview(b"\x89PNG")) == b"\x89PNG"


TEXT_ZST = spec("txt.zst", "text", zstd=Zstd(level=5))


def _dictionary() -> bytes:
    trained = train_dictionary([caption(i).encode() for i in range(16)], 2048)
    assert trained is not None
    return trained


def test_zstd_frames_round_trip_with_and_without_a_dictionary() -> None:
    plain = FieldCodec(TEXT_ZST)
    frame = plain.encode(caption(3))
    assert frame[:4] == b"\x28\xb5\x2f\xfd"
    assert zstandard.ZstdDecompressor().decompress(frame) == caption(3).encode()
    assert plain.decode(frame) == caption(3)
    dictionary = _dictionary()
    with_dict = FieldCodec(TEXT_ZST, dictionary)
    small = with_dict.encode(caption(20))
    assert len(small) < len(frame) < len(caption(20))
    assert with_dict.decode(small) == caption(20)
    assert FieldCodec(TEXT).decompress(b"as is") == b"as is"


def test_damaged_zstd_frames() -> None:
    codec = FieldCodec(TEXT_ZST, _dictionary())
    frame = codec.encode(caption(1))
    with pytest.raises(FieldValueError, match=r"not a zstd frame \(it starts with b'text'\)"):
        codec.decode(b"text, not a frame")
    with pytest.raises(FieldValueError, match=r"zstd frame does not decompress \("):
        codec.decode(frame[:-2])
    with pytest.raises(FieldValueError, match="zstd frame does not decompress"):
        codec.decode(frame[:5])
    with pytest.raises(FieldValueError, match="zstd frame does not decompress"):
        FieldCodec(TEXT_ZST).decode(frame)  # needs the dictionary
    other = train_dictionary([bytes(range(i, i + 200)) * 4 for i in range(16)], 1024)
    assert other is not None
    with pytest.raises(FieldValueError, match="zstd frame does not decompress"):
        FieldCodec(TEXT_ZST, other).decode(frame)


def test_a_dictionary_needs_a_compressed_field() -> None:
    with pytest.raises(ValueError, match="field 'txt' is not compressed; it takes no dictionary"):
        FieldCodec(TEXT, b"dictionary")


def test_train_dictionary_needs_enough_samples() -> None:
    assert train_dictionary([b"a" * 1000] * 7, 1024) is None  # fewer than 8
    assert train_dictionary([b"ab"] * 100, 1024) is None  # under 4 KiB in all
    assert train_dictionary([b""] * 100 + [caption(i).encode() for i in range(4)], 1024) is None
    trained = _dictionary()
    assert 256 <= len(trained) <= 2048
