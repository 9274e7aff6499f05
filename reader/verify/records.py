"""The checks of a record shard (formats/SPEC.md section 4.2), shared by `verify_dataset` and
`verify_remote`: both CRCs of every record, records that tile the file exactly, one record per
sample of the shard, every field of sample `i` inside the data of record `i` (and the Example
holding it under its feature, with the sample's key), and the DALI `tfrecord2idx` index against
the records found.

A shard is scanned in windows (the whole file for a local one): `scan_window` finds the records
that lie whole in a window, and says where the next window starts.
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from fastpack.formats import Index, Schema, ShardFormatError
from fastpack.formats.example import Feature, parse_example
from fastpack.formats.tfrecord import (
    FOOTER_BYTES,
    HEADER_BYTES,
    KEY_FEATURE,
    LABEL_FEATURE,
    RecordSpan,
    feature_name,
    scan_records,
)

from .members import Rows, key_of, outside_problems, present, where

Buffer = bytes | mmap.mmap  # a window of a remote shard, or a local shard mapped whole


def _bytes(data: Buffer) -> bytes:
    """`data` as formats.tfrecord and formats.example take it: they only index, slice and
    unpack their argument, which an mmap does as bytes do (without a copy of the file)."""
    return cast(bytes, data)


class Record(NamedTuple):
    """Record `number` of a shard: where it lies, and whether both its CRCs match."""

    number: int
    span: RecordSpan
    intact: bool

    @property
    def size(self) -> int:
        """The record's whole length, as `tfrecord2idx` lists it."""
        return self.span.end - self.span.offset


@dataclass
class Scan:
    """What `scan_window` found: the records lying whole in the window, their problems (a
    fatal one last), where the scan stopped (file offset), and whether records can still be
    found after it (False after a fatal problem)."""

    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stop: int = 0
    going: bool = True


def scan_window(name: str, data: Buffer, base: int, at_end: bool, first: int) -> Scan:
    """The records in `data`, the shard `name`'s bytes from file offset `base` on (`at_end`:
    to the end of the file), numbered from `first`. A record cut by the window's end (not the
    file's) stops the scan there without a problem: the next window starts with it."""
    found: list[tuple[int, str | None]] = []  # (offset in data, problem) of each record
    scan, fatal = Scan(), ""
    stop = len(data)
    for item in scan_records(_bytes(data), base=base):
        if isinstance(item, RecordSpan):
            found.append((item.offset, None))
        elif item.resumable:
            found.append((item.offset, item.reason))
        else:
            stop = item.offset
            if at_end or not item.truncated:
                scan.going = False
                number = first + len(found)
                fatal = f"{name}: record {number} at byte {base + item.offset}: {item.reason}"
            break
    for k, (offset, reason) in enumerate(found):
        end = found[k + 1][0] if k + 1 < len(found) else stop
        span = RecordSpan(
            base + offset, base + offset + HEADER_BYTES, end - offset - HEADER_BYTES - FOOTER_BYTES
        )
        scan.records.append(Record(first + k, span, reason is None))
        if reason is not None:
            scan.problems.append(f"{name}: record {first + k} at byte {base + offset}: {reason}")
    if fatal:
        scan.problems.append(fatal)
    scan.stop = base + stop
    return scan


def count_problem(name: str, records: int, rows: Rows, shard: int) -> str | None:
    """The problem if a shard wholly scanned holds another number of records than samples."""
    if records == len(rows):
        return None
    return f"{name}: {records} records, the index puts {len(rows)} samples in shard {shard}"


def record_index_problems(
    source: str, lines: Sequence[tuple[int, int]], records: Sequence[Record], complete: bool
) -> list[str]:
    """What a shard's `tfrecord2idx` index (`lines`, read from `source`) says that the records
    found do not; `complete`: the records are all the shard's (its scan did not stop early)."""
    problems = []
    if complete and len(lines) != len(records):
        problems.append(f"{source}: {len(lines)} lines, the shard holds {len(records)} records")
    for record, (offset, size) in zip(records, lines, strict=False):
        if (offset, size) != (record.span.offset, record.size):
            problems.append(
                f"{source}: line {record.number + 1} is '{offset} {size}', record "
                f"{record.number} is at byte {record.span.offset} with {record.size} bytes"
            )
    return problems


class SampleRecords:
    """The checks of the samples of one shard (index rows `rows`) against its records: each
    present field inside its record's data, and in an intact record the Example holding that
    field's value under its feature, and the sample's key."""

    def __init__(self, name: str, index: Index, schema: Schema, rows: Rows) -> None:
        self.name, self.index, self.schema = name, index, schema
        self.rows: list[int] = rows.tolist()
        self._features = {f: feature_name(schema, f) for f in schema.names}

    def problems(self, record: Record, data: Buffer, base: int) -> list[str]:
        """The problems of the sample stored in `record`, whose bytes are those of `data` from
        file offset `base` on."""
        if record.number >= len(self.rows):
            return []  # the count check reports a record too many
        row = self.rows[record.number]
        problems = self._placement(record, row)
        if record.intact and not problems:
            problems += self._example(record, row, data, base)
        return problems

    def _placement(self, record: Record, row: int) -> list[str]:
        span = record.span
        return outside_problems(
            self.name,
            self.index,
            self.schema.names,
            row,
            span=(span.data_offset, span.data_offset + span.size),
            holder=f"record {record.number} at byte {span.offset}",
        )

    def _example(self, record: Record, row: int, data: Buffer, base: int) -> list[str]:
        span = record.span
        what = f"{self.name}: record {record.number} at byte {span.offset}"
        try:
            start = span.data_offset - base
            features = parse_example(_bytes(data), start, start + span.size)
        except ShardFormatError as e:
            return [f"{what}: {e}"]
        problems = []
        key = key_of(self.index, row)
        found = _bytes_value(features.get(KEY_FEATURE), data)
        if found != key.encode("utf-8"):
            problems.append(f"{what}: key {found!r}, the index has sample {row} key {key}")
        for f, name in self._features.items():
            problem = self._feature_problem(features.get(name), f, row, data, base)
            if problem is not None:
                problems.append(f"{where(self.name, self.index, row, f)}: {problem}")
        return problems

    def _feature_problem(
        self, feature: Feature | None, f: str, row: int, data: Buffer, base: int
    ) -> str | None:
        index, name = self.index, self._features[f]
        if not present(index, f, row):
            return None if feature is None else f"marked absent, but the record has {name!r}"
        if feature is None:
            return f"the record has no feature {name!r}"
        if name == LABEL_FEATURE:
            label = int(index.label[row])
            found = list(feature.numbers)
            return None if found == [label] else f"{name!r} holds {found}, the label is {label}"
        offset, size = int(index.offsets(f)[row]), int(index.sizes(f)[row])
        spans = [(base + a, n) for a, n in feature.spans]
        if feature.kind != "bytes" or spans != [(offset, size)]:
            return (
                f"{name!r} holds {feature.kind} values at {spans}, the index has one at "
                f"{(offset, size)}"
            )
        return None


def _bytes_value(feature: Feature | None, data: Buffer) -> bytes | None:
    """The one value of a bytes feature of an Example parsed in `data`; None for anything
    else."""
    if feature is None or feature.kind != "bytes" or len(feature.spans) != 1:
        return None
    offset, size = feature.spans[0]
    return bytes(data[offset : offset + size])
