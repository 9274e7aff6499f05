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

from .errors import FieldValueError, ShardFormatError

Kind = Literal["bytes", "float", "int64"]
Buffer = bytes | bytearray | memoryview

_LEN = 2  # wire type: length-delimited
_VARINT = 0
_FIXED32 = 5
_FIXED64 = 1
_KINDS: dict[int, Kind] = {1: "bytes", 2: "float", 3: "int64"}
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1
_INT64 = range(-(1 << 63), 1 << 63)
_LOW7 = 0x7F  # a varint byte's value bits
_MORE = 0x80  # a varint byte's continuation bit: bytes below it end the varint
_LAST_SHIFT = 63  # a 64-bit varint's last byte starts at bit 63 (10 bytes)
_ENTRY_KEY, _ENTRY_VALUE = 1, 2  # the field numbers of a map entry's key and value


def varint(value: int) -> bytes:
    """`value` as a protobuf varint; a negative int64 as its 64-bit two's complement (10 bytes)."""
    value &= _U64
    out = bytearray()
    while value > _LOW7:
        out.append(value & _LOW7 | _MORE)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = tuple(varint(n) for n in range(1 << 14))


def _length(n: int) -> bytes:
    if n < 1 << 14:
        return _SMALL_VARINTS[n]
    if n < 1 << 21:  # an image's size: three bytes
        return bytes((n & 0x7F | 0x80, n >> 7 & 0x7F | 0x80, n >> 14))
    return varint(n)


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
        if value not in _INT64:
            raise FieldValueError(f"feature {key!r}: {value} is outside int64")
        payload: Buffer = varint(value)
        kind = _INT64_LIST
    else:
        # a view's len() counts its items, not bytes: take every payload as bytes
        payload = value if isinstance(value, bytes) else memoryview(value).cast("B")
        kind = _BYTES_LIST
    inner = _ENTRY + _length(len(payload))  # BytesList.value / Int64List packed values
    feature = kind + _length(len(inner) + len(payload))
    feature_size = len(feature) + len(inner) + len(payload)
    body = _ENTRY + _length(len(key)) + key + _VALUE + _length(feature_size)
    entry_size = len(body) + feature_size
    return _ENTRY + _length(entry_size) + body + feature + inner, payload


_INLINE_BYTES = 1024  # payloads up to this size are copied into their neighbours' part
_ENTRIES_MAX = 1 << 16


_CACHED_BYTES = 8  # bytes values up to this size are cached too (an image's format)
_ENTRIES: dict[tuple[bytes, Value], tuple[bytes, int]] = {}  # (key, value): (entry, payload at)


def _cached_entry(key: bytes, value: int | bytes) -> tuple[bytes, int]:
    """A whole entry of an int64 or a short bytes value, and where its payload starts in it:
    such values repeat (image sizes, labels, formats), so entries are kept, up to a bound."""
    found = _ENTRIES.get((key, value))
    if found is None:
        header, payload = _feature_header(key, value)
        found = (header + bytes(payload), len(header))
        if len(_ENTRIES) < _ENTRIES_MAX:
            _ENTRIES[key, value] = found
    return found


def encode_example(features: Sequence[tuple[bytes, Value]]) -> EncodedExample:
    """An Example holding each `(name, value)` in this order: bytes as a one-value BytesList,
    an int as a one-value packed Int64List. Names must be unique (the caller's fixed order).

    Small pieces are joined into few parts; a payload over 1 KiB stays a part of its own, so it
    is written and checksummed where it lies, never copied."""
    parts: list[Buffer] = []
    spans: list[tuple[int, int]] = []
    small = bytearray()
    position = 0
    for key, value in features:
        if isinstance(value, int) or len(value) <= _CACHED_BYTES:
            entry, at = _cached_entry(key, value if isinstance(value, int) else bytes(value))
            spans.append((position + at, len(entry) - at))
            small += entry
            position += len(entry)
            continue
        header, payload = _feature_header(key, value)
        small += header
        position += len(header)
        spans.append((position, len(payload)))
        position += len(payload)
        if len(payload) > _INLINE_BYTES:
            parts += (bytes(small), payload)
            small = bytearray()
        else:
            small += payload
    head = _ENTRY + _length(position)
    if small or not parts:
        parts.append(bytes(small))
    parts[0] = head + bytes(parts[0])
    shift = len(head)
    return EncodedExample(
        parts=parts,
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
    begin = pos
    while True:
        if shift > _LAST_SHIFT:
            raise ValueError(f"the varint at byte {begin} is longer than 10 bytes")
        if pos >= end:
            raise ValueError(f"the varint at byte {begin} runs past its message (ends at {end})")
        byte = data[pos]
        pos += 1
        value |= (byte & _LOW7) << shift
        if byte < _MORE:
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
    raise ValueError(f"wire type {wire} at byte {pos} is not used by Example")


def _fields(data: Buffer, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """`(number, wire, start, stop)` of each field of the message in `data[pos:end]`; for a
    length-delimited field, start/stop bound its payload; for a varint, start is its value."""
    found = []
    while pos < end:
        at = pos
        tag = data[pos]
        if tag < _MORE:  # one-byte varints (tags, short lengths) read inline: the common case
            pos += 1
        else:
            tag, pos = _read_varint(data, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0 or tag > _U32:
            raise ValueError(f"tag {tag} at byte {at}: field numbers are 1 to 2^29 - 1")
        if wire == _LEN:
            if pos < end and data[pos] < _MORE:
                size = data[pos]
                pos += 1
            else:
                size, pos = _read_varint(data, pos, end)
            start, pos = pos, pos + size
            if pos > end:
                raise ValueError(
                    f"field {number} at byte {at} runs past its message to {pos} > {end}"
                )
            found.append((number, wire, start, pos))
        elif wire == _VARINT:
            value, pos = _read_varint(data, pos, end)
            found.append((number, wire, value, pos))
        else:
            start, pos = pos, _skip(data, wire, pos, end)
            if pos > end:
                raise ValueError(
                    f"field {number} at byte {at} runs past its message to {pos} > {end}"
                )
            found.append((number, wire, start, pos))
    return found


def decode_varint(data: bytes | memoryview) -> int:
    """The int64 that a label's member holds in a record shard: exactly one protobuf varint, the
    value's 64-bit two's complement (formats/SPEC.md section 4.2); FieldValueError otherwise."""
    raw = bytes(data)
    try:
        value, end = _read_varint(raw, 0, len(raw))
    except ValueError:
        end = -1
    if end != len(raw):
        raise FieldValueError(f"a class member that is not one protobuf varint: {raw[:12]!r}")
    if value >> 64:
        raise FieldValueError(f"a varint of more than 64 bits: {raw!r}")
    return _int64(value)


def _int64(value: int) -> int:
    value &= _U64  # a varint's bits past the 64th are dropped, as protobuf does
    return value - (1 << 64) if value >> 63 else value


@dataclass
class _Values:
    """A Feature's list as read so far: bytes spans, or numbers."""

    kind: Kind
    spans: list[tuple[int, int]] = field(default_factory=list)
    ints: list[int] = field(default_factory=list)
    floats: list[float] = field(default_factory=list)


def _read_list(values: _Values, data: Buffer, lo: int, hi: int) -> None:
    """Add the values of the BytesList, FloatList or Int64List in `data[lo:hi]`; a field of
    another number or wire type is an unknown field, skipped, as protobuf skips it."""
    kind = values.kind
    for n, w, a, b in _fields(data, lo, hi):
        if n != 1:
            continue
        if kind == "bytes" and w == _LEN:
            values.spans.append((a, b - a))
        elif kind == "int64" and w == _VARINT:
            values.ints.append(_int64(a))
        elif kind == "int64" and w == _LEN:  # packed
            pos = a
            while pos < b:
                value, pos = _read_varint(data, pos, b)
                values.ints.append(_int64(value))
        elif kind == "float" and w == _FIXED32:
            values.floats.append(struct.unpack_from("<f", data, a)[0])
        elif kind == "float" and w == _LEN:  # packed
            if (b - a) % 4:
                raise ValueError(
                    f"packed floats at byte {a} are {b - a} bytes, not a multiple of 4"
                )
            values.floats += [v for (v,) in struct.iter_unpack("<f", bytes(data[a:b]))]


def _parse_feature(data: Buffer, ranges: list[tuple[int, int]]) -> Feature | None:
    """The Feature message given in `ranges` (one, or several to merge, as protobuf merges a
    message field that appears more than once); None for one with no kind set."""
    values: _Values | None = None
    for start, stop in ranges:
        for number, wire, lo, hi in _fields(data, start, stop):
            if number not in _KINDS or wire != _LEN:
                continue
            if values is None or values.kind != _KINDS[number]:
                values = _Values(_KINDS[number])  # oneof: another kind clears the one before
            _read_list(values, data, lo, hi)  # the same kind again: its lists are merged
    if values is None:
        return None
    numbers = values.ints if values.kind == "int64" else values.floats
    return Feature(values.kind, values.spans, numbers)


def _parse_entry(data: Buffer, lo: int, hi: int) -> tuple[str, Feature | None]:
    """A map entry of Features: its name (protobuf's default, "", when absent) and Feature."""
    name = ""
    value: list[tuple[int, int]] = []
    for k, kw, ka, kb in _fields(data, lo, hi):
        if k == _ENTRY_KEY and kw == _LEN:
            name = bytes(data[ka:kb]).decode("utf-8")
        elif k == _ENTRY_VALUE and kw == _LEN:
            value.append((ka, kb))
    return name, _parse_feature(data, value)


def parse_example(data: Buffer, start: int = 0, stop: int | None = None) -> dict[str, Feature]:
    """The features of the Example in `data[start:stop]`, by name; spans are offsets in `data`.
    ShardFormatError for bytes that are not an Example, naming the byte offset."""
    stop = len(data) if stop is None else stop
    if not 0 <= start <= stop <= len(data):
        raise ShardFormatError(f"Example span {start}..{stop} is outside the {len(data)} bytes")
    features: dict[str, Feature] = {}
    try:
        for number, wire, lo, hi in _fields(data, start, stop):
            if number != 1 or wire != _LEN:
                continue
            for n, w, a, b in _fields(data, lo, hi):
                if n != 1 or w != _LEN:
                    continue
                name, feature = _parse_entry(data, a, b)
                if feature is not None:
                    features[name] = feature  # a map's last entry for a key wins
                else:
                    features.pop(name, None)  # an empty Feature: no values of any kind
    except (ValueError, struct.error) as e:  # UnicodeDecodeError is a ValueError
        raise ShardFormatError(f"not a tf.train.Example: {e}") from e
    return features
