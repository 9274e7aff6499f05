"""TFRecord shards (formats/SPEC.md section 4.2): one `tf.train.Example` per sample, framed as

    u64 length | u32 masked CRC32C of the length's 8 bytes | data | u32 masked CRC32C of data

and DALI's `tfrecord2idx` index beside each shard (one `offset size` line per record). CRC32C is
google-crc32c's (C, hardware-accelerated where the CPU has it).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import google_crc32c

from .errors import ChecksumMismatchError, ShardFormatError, TruncatedFileError
from .example import EncodedExample, Value, encode_example, varint
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
    """`(height, width)` from an image's header: a JPEG's frame header or a PNG's IHDR."""
    if image_type == "png":
        if len(data) < 24:
            raise ShardFormatError("PNG too short to hold its IHDR chunk")
        width, height = struct.unpack_from(">II", data, 16)
        return height, width
    import simplejpeg  # noqa: PLC0415 - only when the caller does not know the size

    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    return height, width


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
        image = schema.image_field
        self._image_type = schema[image].type if image is not None else ""
        self.position = 0
        self.records: list[tuple[int, int]] = []  # (offset, size) of each record: DALI's index

    def add_sample(
        self,
        key: str,
        members: Sequence[tuple[str, bytes]],
        size: tuple[int, int] | None = None,
    ) -> WrittenSample:
        """One record holding `members` (`(field, bytes as a tar member holds them)` in schema
        order) and the key; `size` is the image's `(height, width)` when the caller knows it."""
        check_key(key)
        schema = self._schema
        features: list[tuple[bytes, Value]] = []
        where: list[int] = []  # each member's feature position
        stored: list[bytes] = []
        for field, data in members:
            if field == schema.image_field:
                height, width = size if size and size[0] else image_size(data, self._image_type)
                where.append(len(features))
                features += [
                    (IMAGE_FEATURE.encode(), data),
                    (FORMAT_FEATURE.encode(), IMAGE_FORMATS[self._image_type]),
                    (HEIGHT_FEATURE.encode(), height),
                    (WIDTH_FEATURE.encode(), width),
                ]
                stored.append(data)
            elif field == schema.label_field:
                label = int(data)
                where.append(len(features))
                features.append((LABEL_FEATURE.encode(), label))
                stored.append(varint(label))
            else:
                where.append(len(features))
                features.append((self._names[field], data))
                stored.append(data)
        features.append((KEY_FEATURE.encode(), key.encode("ascii")))
        return self._write(key, [f for f, _ in members], encode_example(features), where, stored)

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
            crc = google_crc32c.extend(crc, bytes(part) if not isinstance(part, bytes) else part)
        write = self._file.write
        write(record_header(example.size))
        for part in example.parts:
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
    """A record that cannot be used: where, why, and whether the records after it can still
    be found (`False` once the framing itself cannot be trusted)."""

    offset: int
    reason: str
    resumable: bool


def scan_records(data: bytes, *, check_data: bool = True) -> Iterator[RecordSpan | RecordProblem]:
    """Every record of a TFRecord file's bytes, checking both CRCs (the data's only with
    `check_data`); a problem is yielded where it is found, and scanning stops after one that is
    not resumable."""
    size, pos = len(data), 0
    while pos < size:
        if size - pos < HEADER_BYTES:
            yield RecordProblem(pos, f"truncated: {size - pos} bytes left, a record header "
                                f"needs {HEADER_BYTES}", resumable=False)  # fmt: skip
            return
        length_bytes = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack_from("<I", data, pos + 8)
        if masked_crc32c(length_bytes) != length_crc:
            yield RecordProblem(pos, "length CRC mismatch", resumable=False)
            return
        data_offset = pos + HEADER_BYTES
        end = data_offset + length + FOOTER_BYTES
        if end > size:
            yield RecordProblem(
                pos, f"truncated: the record needs bytes up to {end}, the file has {size}",
                resumable=False,
            )  # fmt: skip
            return
        if check_data:
            (data_crc,) = struct.unpack_from("<I", data, data_offset + length)
            if masked_crc32c(data[data_offset : data_offset + length]) != data_crc:
                yield RecordProblem(pos, "data CRC mismatch", resumable=True)
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
            kind = TruncatedFileError if found.reason.startswith("truncated") else (
                ChecksumMismatchError)  # fmt: skip
            raise kind(f"{path}: record at byte {found.offset}: {found.reason}")
        yield found, data


def format_record_index(records: Sequence[tuple[int, int]]) -> str:
    """DALI's `tfrecord2idx` text: `offset size` of each record, one per line."""
    return "".join(f"{offset} {size}\n" for offset, size in records)


def parse_record_index(text: str, source: str) -> list[tuple[int, int]]:
    """The `(offset, size)` lines of a `tfrecord2idx` index; `source` names it in errors."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if len(tokens) != 2 or not all(t.isdigit() for t in tokens):
            raise ShardFormatError(f"{source}: line {number} is not '<offset> <size>': {line!r}")
        records.append((int(tokens[0]), int(tokens[1])))
    return records


def write_file(file: BinaryIO, payloads: Sequence[bytes]) -> None:
    """Frame each payload as a record (for tests and tools writing plain TFRecord files)."""
    for payload in payloads:
        file.write(record_header(len(payload)))
        file.write(payload)
        file.write(struct.pack("<I", masked_crc32c(payload)))
