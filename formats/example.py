"""`tf.train.Example` in protobuf's wire format (formats/SPEC.md section 4.2): written by fastpack
itself, in one fixed order, and read back without copying the values.

Writing gives the parts of the message (to be written or checksummed one after another, so an
image's bytes are never copied into a new buffer) and where each feature's value starts inside
it. Reading accepts any valid Example, packed or unpacked lists, in any order.

    message Example  { Features features = 1; }
    message Features { map<string, Feature> feature = 1; }   // entry: key = 1, value = 2
    message Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                                    Int64List int64_list = 3; } }
    message BytesList { repeated bytes value = 1; }
    message FloatList { repeated float value = 1 [packed = true]; }
    message Int64List { repeated int64 value = 1 [packed = true]; }
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from .errors import ShardFormatError

Kind = Literal["bytes", "float", "int64"]
Buffer = bytes | bytearray | memoryview

_LEN = 2  # wire type: length-delimited
_VARINT = 0
_FIXED32 = 5
_FIXED64 = 1
_KINDS: dict[int, Kind] = {1: "bytes", 2: "float", 3: "int64"}
_U64 = (1 << 64) - 1


def varint(value: int) -> bytes:
    """`value` as a protobuf varint; a negative int64 as its 64-bit two's complement (10 bytes)."""
    value &= _U64
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = tuple(varint(n) for n in range(1 << 14))


def _length(n: int) -> bytes:
    return _SMALL_VARINTS[n] if n < len(_SMALL_VARINTS) else varint(n)


def _tag(number: int, wire: int) -> bytes:
    return bytes([number << 3 | wire])


_ENTRY = _tag(1, _LEN)  # Example.features, Features.feature, map key, lists' value: all field 1
_VALUE = _tag(2, _LEN)  # map entry value
_BYTES_LIST = _tag(1, _LEN)
_INT64_LIST = _tag(3, _LEN)

Value = bytes | bytearray | memoryview | int


@dataclass(frozen=True)
class EncodedExample:
    """An Example as parts to write in order, its size, and where each feature's value lies
    in it: `(offset, size)` of the bytes value, or of the int64's varint."""

    parts: list[Buffer]
    size: int
    spans: list[tuple[int, int]]


def _feature_header(key: bytes, value: Value) -> tuple[bytes, Buffer]:
    """The map entry's bytes before the value's payload, and the payload (bytes, or an int64's
    varint, packed)."""
    if isinstance(value, int):
        payload: Buffer = varint(value)
        kind = _INT64_LIST
    else:
        payload = value
        kind = _BYTES_LIST
    inner = _ENTRY + _length(len(payload))  # BytesList.value / Int64List packed values
    feature = kind + _length(len(inner) + len(payload))
    feature_size = len(feature) + len(inner) + len(payload)
    body = _ENTRY + _length(len(key)) + key + _VALUE + _length(feature_size)
    entry_size = len(body) + feature_size
    return _ENTRY + _length(entry_size) + body + feature + inner, payload


def encode_example(features: Sequence[tuple[bytes, Value]]) -> EncodedExample:
    """An Example holding each `(name, value)` in this order: bytes as a one-value BytesList,
    an int as a one-value packed Int64List. Names must be unique (the caller's fixed order)."""
    parts: list[Buffer] = []
    spans: list[tuple[int, int]] = []
    position = 0
    for key, value in features:
        header, payload = _feature_header(key, value)
        parts += (header, payload)
        position += len(header)
        spans.append((position, len(payload)))
        position += len(payload)
    head = _ENTRY + _length(position)
    shift = len(head)
    return EncodedExample(
        parts=[head, *parts],
        size=shift + position,
        spans=[(offset + shift, size) for offset, size in spans],
    )


@dataclass
class Feature:
    """One feature of a parsed Example: its kind, and each value's `(offset, size)` inside the
    parsed buffer (bytes), or its values (int64, float)."""

    kind: Kind
    spans: list[tuple[int, int]] = field(default_factory=list)
    numbers: list[int] | list[float] = field(default_factory=list)


def _read_varint(data: Buffer, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("varint runs past its message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _skip(data: Buffer, wire: int, pos: int, end: int) -> int:
    if wire == _VARINT:
        return _read_varint(data, pos, end)[1]
    if wire == _FIXED64:
        return pos + 8
    if wire == _FIXED32:
        return pos + 4
    if wire == _LEN:
        size, pos = _read_varint(data, pos, end)
        return pos + size
    raise ValueError(f"wire type {wire} is not used by Example")


def _fields(data: Buffer, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """`(number, wire, start, stop)` of each field of the message in `data[pos:end]`; for a
    length-delimited field, start/stop bound its payload; for a varint, start is its value."""
    found = []
    while pos < end:
        tag, pos = _read_varint(data, pos, end)
        number, wire = tag >> 3, tag & 7
        if wire == _LEN:
            size, pos = _read_varint(data, pos, end)
            start, pos = pos, pos + size
            if pos > end:
                raise ValueError(f"field {number} runs past its message")
            found.append((number, wire, start, pos))
        elif wire == _VARINT:
            value, pos = _read_varint(data, pos, end)
            found.append((number, wire, value, pos))
        else:
            start, pos = pos, _skip(data, wire, pos, end)
            if pos > end:
                raise ValueError(f"field {number} runs past its message")
            found.append((number, wire, start, pos))
    return found


def _int64(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def _parse_feature(data: Buffer, start: int, stop: int) -> Feature | None:
    """A Feature message; None for one with no kind set."""
    parsed: Feature | None = None
    for number, wire, lo, hi in _fields(data, start, stop):
        if number not in _KINDS or wire != _LEN:
            continue
        parsed = Feature(_KINDS[number])  # oneof: the last one set wins
        ints: list[int] = []
        floats: list[float] = []
        for n, w, a, b in _fields(data, lo, hi):
            if n != 1:
                continue
            if parsed.kind == "bytes" and w == _LEN:
                parsed.spans.append((a, b - a))
            elif parsed.kind == "int64" and w == _VARINT:
                ints.append(_int64(a))
            elif parsed.kind == "int64" and w == _LEN:  # packed
                pos = a
                while pos < b:
                    value, pos = _read_varint(data, pos, b)
                    ints.append(_int64(value))
            elif parsed.kind == "float" and w == _FIXED32:
                floats.append(struct.unpack_from("<f", data, a)[0])
            elif parsed.kind == "float" and w == _LEN:  # packed
                if (b - a) % 4:
                    raise ValueError("packed floats are not a multiple of 4 bytes")
                floats += [v for (v,) in struct.iter_unpack("<f", bytes(data[a:b]))]
            else:
                raise ValueError(f"{parsed.kind} list holds wire type {w}")
        parsed.numbers = ints if parsed.kind == "int64" else floats
    return parsed


def parse_example(data: Buffer, start: int = 0, stop: int | None = None) -> dict[str, Feature]:
    """The features of the Example in `data[start:stop]`, by name; spans are offsets in `data`.
    ShardFormatError for bytes that are not an Example."""
    stop = len(data) if stop is None else stop
    features: dict[str, Feature] = {}
    try:
        for number, wire, lo, hi in _fields(data, start, stop):
            if number != 1 or wire != _LEN:
                continue
            for n, w, a, b in _fields(data, lo, hi):
                if n != 1 or w != _LEN:
                    continue
                name, value = None, None
                for k, kw, ka, kb in _fields(data, a, b):
                    if k == 1 and kw == _LEN:
                        name = bytes(data[ka:kb]).decode("utf-8")
                    elif k == 2 and kw == _LEN:
                        value = (ka, kb)
                if name is None:
                    raise ValueError("a feature map entry has no name")
                feature = _parse_feature(data, *value) if value is not None else None
                if feature is not None:
                    features[name] = feature  # a map's last entry for a key wins
                else:
                    features.pop(name, None)
    except (ValueError, UnicodeDecodeError, struct.error) as e:
        raise ShardFormatError(f"not a tf.train.Example: {e}") from e
    return features
