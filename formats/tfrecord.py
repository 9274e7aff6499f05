"""TFRecord shards (formats/SPEC.md section 4.2): one `tf.train.Example` per sample, framed as

    u64 length | u32 masked CRC32C of the length's 8 bytes | data | u32 masked CRC32C of data

and DALI's `tfrecord2idx` index beside each shard (one `offset size` line per record). CRC32C is
google-crc32c's (C, hardware-accelerated where the CPU has it).
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import google_crc32c

from .errors import ChecksumMismatchError, FieldValueError, ShardFormatError, TruncatedFileError
from .example import EncodedExample, Value, encode_example, varint
from .image_header import ImageHeaderError, jpeg_header, png_header
from .schema import Schema
from .tar_shard import MemberLocation, check_key

HEADER_BYTES = 12  # length (8) + its masked CRC (4)
FOOTER_BYTES = 4  # masked CRC of the data
_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF

IMAGE_FEATURE = "image/encoded"
FORMAT_FEATURE = "image/format"
HEIGHT_FEATURE = "image/height"
WIDTH_FEATURE = "image/width"
LABEL_FEATURE = "image/class/label"
KEY_FEATURE = "fastpack/key"
FIELD_PREFIX = "fastpack/"
IMAGE_FORMATS = {"jpeg": b"jpeg", "png": b"png"}
_LABEL = re.compile(rb"-?[0-9]+")
_IMAGE, _FORMAT = IMAGE_FEATURE.encode(), FORMAT_FEATURE.encode()
_HEIGHT, _WIDTH = HEIGHT_FEATURE.encode(), WIDTH_FEATURE.encode()
_LABEL_NAME, _KEY = LABEL_FEATURE.encode(), KEY_FEATURE.encode()
_INDEX_LINE = re.compile(r"[ \t]*([0-9]+)[ \t]+([0-9]+)[ \t]*")


def mask(crc: int) -> int:
    """TFRecord's masked CRC: rotated right by 15 bits, plus a constant (mod 2^32)."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & _U32


def masked_crc32c(data: bytes) -> int:
    return mask(google_crc32c.value(data))


def record_header(length: int) -> bytes:
    """The 12 bytes before a record's data."""
    encoded = struct.pack("<Q", length)
    return encoded + struct.pack("<I", masked_crc32c(encoded))


def feature_name(schema: Schema, field: str) -> str:
    """The Example feature that holds `field`: the image and label under TensorFlow's names,
    every other field under `fastpack/<field>`."""
    if field == schema.image_field:
        return IMAGE_FEATURE
    if field == schema.label_field:
        return LABEL_FEATURE
    return FIELD_PREFIX + field


def image_size(data: bytes, image_type: str) -> tuple[int, int]:
    """`(height, width)` from an image's header: a JPEG's frame header or a PNG's IHDR, read
    from the bytes alone (`image_header`); FieldValueError for bytes that do not start like one
    or declare no pixels."""
    if image_type == "png":
        return png_header(data).size
    try:
        return jpeg_header(data).size
    except ImageHeaderError as e:
        raise FieldValueError(f"not a JPEG whose header reads ({e})") from e


def _label(key: str, field: str, data: bytes) -> int:
    """A class member's value: ASCII decimal (SPEC 4.1) within int64."""
    value = int(data) if _LABEL.fullmatch(data) else None
    if value is None or not -(1 << 63) <= value < 1 << 63:
        raise FieldValueError(
            f"{key}.{field}: a class member is an int64 in ASCII decimal, found {data[:40]!r}"
        )
    return value


@dataclass(frozen=True)
class WrittenSample:
    """Where a sample's members landed (data offsets are those of each feature's value), the
    bytes stored for each (the label as its varint), and the record's own span."""

    locations: list[MemberLocation]
    stored: list[bytes]
    record_offset: int
    record_size: int


class RecordShardWriter:
    """Appends samples to a binary file as TFRecords of fastpack-encoded Examples."""

    def __init__(self, file: BinaryIO, schema: Schema) -> None:
        self._file = file
        self._schema = schema
        self._names = {f: feature_name(schema, f).encode() for f in schema.names}
        self._image = schema.image_field
        self._label = schema.label_field
        self._image_type = schema[self._image].type if self._image is not None else ""
        self._format = IMAGE_FORMATS.get(self._image_type, b"")
        self._fields = list(schema.names)  # members of a sample that holds every field
        self.position = 0
        self.records: list[tuple[int, int]] = []  # (offset, size) of each record: DALI's index

    def add_sample(
        self,
        key: str,
        members: Sequence[tuple[str, bytes]],
        size: tuple[int, int] | None = None,
    ) -> WrittenSample:
        """One record holding `members` (`(field, bytes as a tar member holds them)` in schema
        order, every required field present) and the key; `size` is the image's `(height,
        width)` when the caller knows it. The Example holds them in SPEC 4.2's order (image
        features, label, the other fields, key); the locations follow `members`' order."""
        check_key(key)
        if not key.isascii():
            raise ShardFormatError(f"key {key!r}: the keys of a record shard are ASCII")
        fields = [f for f, _ in members]
        if fields != self._fields:
            self._check_fields(key, fields)
        image: list[tuple[bytes, Value]] = []
        label: list[tuple[bytes, Value]] = []
        other: list[tuple[bytes, Value]] = []
        where: list[tuple[int, int]] = []  # each member's group (0 image, 1 label, 2 other)
        stored: list[bytes] = []
        for field, data in members:
            if field == self._image:
                height, width = self._image_size(key, field, data, size)
                where.append((0, 0))
                image += (
                    (_IMAGE, data),
                    (_FORMAT, self._format),
                    (_HEIGHT, height),
                    (_WIDTH, width),
                )
                stored.append(data)
            elif field == self._label:
                value = _label(key, field, data)
                where.append((1, len(label)))
                label.append((_LABEL_NAME, value))
                stored.append(varint(value))
            else:
                where.append((2, len(other)))
                other.append((self._names[field], data))
                stored.append(data)
        other.append((_KEY, key.encode("ascii")))
        first = (0, len(image), len(image) + len(label))
        positions = [first[group] + i for group, i in where]
        example = encode_example(image + label + other)
        return self._write(key, fields, example, positions, stored)

    def _check_fields(self, key: str, fields: list[str]) -> None:
        """Members in schema order, each field once, every required field present."""
        names = self._schema.names
        unknown = [f for f in fields if f not in self._schema]
        if unknown:
            raise ShardFormatError(f"key {key!r}: fields {unknown} are not in the schema {names}")
        if len(set(fields)) != len(fields) or fields != sorted(fields, key=names.index):
            raise ShardFormatError(
                f"key {key!r}: members {fields}, expected each field once in schema order {names}"
            )
        missing = [s.name for s in self._schema.fields if not s.optional and s.name not in fields]
        if missing:
            raise ShardFormatError(f"key {key!r}: required fields {missing} are missing")

    def _image_size(
        self, key: str, field: str, data: bytes, size: tuple[int, int] | None
    ) -> tuple[int, int]:
        if size and size[0]:
            return size
        try:
            return image_size(data, self._image_type)
        except FieldValueError as e:
            raise FieldValueError(f"{key}.{field}: {e}") from e

    def _write(
        self,
        key: str,
        fields: list[str],
        example: EncodedExample,
        where: list[int],
        stored: list[bytes],
    ) -> WrittenSample:
        crc = 0
        for part in example.parts:
            crc = google_crc32c.extend(crc, part if isinstance(part, bytes) else bytes(part))
        write = self._file.write
        first, *rest = example.parts
        write(record_header(example.size) + first)
        for part in rest:
            write(part)
        write(struct.pack("<I", mask(crc)))
        start = self.position
        data_start = start + HEADER_BYTES
        locations = []
        for field, position in zip(fields, where, strict=True):
            offset, length = example.spans[position]
            locations.append(MemberLocation(f"{key}.{field}", start, data_start + offset, length))
        record_size = HEADER_BYTES + example.size + FOOTER_BYTES
        self.position += record_size
        self.records.append((start, record_size))
        return WrittenSample(locations, stored, start, record_size)

    def finish(self) -> int:
        """The shard's total size (a TFRecord file has no trailer)."""
        return self.position


@dataclass(frozen=True)
class RecordSpan:
    """One record: where it starts, where its data starts, and the data's size."""

    offset: int
    data_offset: int
    size: int

    @property
    def end(self) -> int:
        return self.data_offset + self.size + FOOTER_BYTES


@dataclass(frozen=True)
class RecordProblem:
    """A record that cannot be used: where, why, whether the records after it can still be
    found (`False` once the framing itself cannot be trusted), and whether the bytes ran out
    inside it (a truncated file, or a window of one that cuts it)."""

    offset: int
    reason: str
    resumable: bool
    truncated: bool = False


def _crc_mismatch(what: str, stored: int, computed: int) -> str:
    return f"{what} CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"


def scan_records(
    data: bytes, *, check_data: bool = True, base: int = 0
) -> Iterator[RecordSpan | RecordProblem]:
    """Every record of a TFRecord file's bytes, checking both CRCs (the data's only with
    `check_data`); a problem is yielded where it is found, and scanning stops after one that is
    not resumable. Offsets are offsets in `data`; `base`, the file offset of `data` (a window of
    the file), only shifts the byte numbers written in problem reasons."""
    size, pos = len(data), 0
    while pos < size:
        if size - pos < HEADER_BYTES:
            left = f"truncated: {size - pos} bytes left, a record header needs {HEADER_BYTES}"
            yield RecordProblem(pos, left, resumable=False, truncated=True)
            return
        length_bytes = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack_from("<I", data, pos + 8)
        expected = masked_crc32c(length_bytes)
        if expected != length_crc:
            yield RecordProblem(pos, _crc_mismatch("length", length_crc, expected), resumable=False)
            return
        data_offset = pos + HEADER_BYTES
        end = data_offset + length + FOOTER_BYTES
        if end > size:
            yield RecordProblem(
                pos,
                f"truncated: the record needs bytes up to {base + end}, the file has {base + size}",
                resumable=False,
                truncated=True,
            )
            return
        if check_data:
            (data_crc,) = struct.unpack_from("<I", data, data_offset + length)
            expected = masked_crc32c(data[data_offset : data_offset + length])
            if expected != data_crc:
                yield RecordProblem(pos, _crc_mismatch("data", data_crc, expected), resumable=True)
                pos = end
                continue
        yield RecordSpan(pos, data_offset, length)
        pos = end


def read_records(path: str | os.PathLike[str]) -> Iterator[tuple[RecordSpan, bytes]]:
    """Every record of a TFRecord file with the file's bytes; the first problem raises
    `TruncatedFileError` or `ChecksumMismatchError` naming the file and the record's offset."""
    with open(path, "rb") as f:
        data = f.read()
    for found in scan_records(data):
        if isinstance(found, RecordProblem):
            kind = TruncatedFileError if found.truncated else ChecksumMismatchError
            raise kind(f"{path}: record at byte {found.offset}: {found.reason}")
        yield found, data


def format_record_index(records: Sequence[tuple[int, int]]) -> str:
    """DALI's `tfrecord2idx` text: `offset size` of each record, one per line."""
    return "".join(f"{offset} {size}\n" for offset, size in records)


def parse_record_index(text: str, source: str) -> list[tuple[int, int]]:
    """The `(offset, size)` lines of a `tfrecord2idx` index; `source` names it in errors."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _INDEX_LINE.fullmatch(line)
        if match is None:  # ASCII digits only: str.isdigit() takes "²", which int() refuses
            raise ShardFormatError(f"{source}: line {number} is not '<offset> <size>': {line!r}")
        records.append((int(match[1]), int(match[2])))
    return records


def write_file(file: BinaryIO, payloads: Sequence[bytes]) -> None:
    """Frame each payload as a record (for tests and tools writing plain TFRecord files)."""
    for payload in payloads:
        file.write(record_header(len(payload)))
        file.write(payload)
        file.write(struct.pack("<I", masked_crc32c(payload)))
