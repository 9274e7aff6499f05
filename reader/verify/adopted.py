"""The checks of a dataset over adopted shards (formats/SPEC.md section 10): shards written by
another tool, which follow none of section 4's layout rules (key width and form, member order
and names, USTAR only, padding, one record per sample). The index is the truth: each shard's
size, SHA-256 and CRC-32C, each member's range inside its shard and CRC-32 (`members`), the
DALI index against the index, and in a record shard each indexed sample's record (its framing
and both CRCs) holding its fields. A record or member the index does not use is not checked:
it was rejected when the shards were indexed (`rejects.jsonl`).
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence

from fastpack.formats import Index, Schema
from fastpack.formats.tfrecord import RecordProblem, RecordSpan, scan_records
from fastpack.formats.wds_index import VERSION_TAG

from .members import Rows, key_of, outside_problems, present

_GROUP = 4  # ext, data offset, size, member name
Buffer = bytes | memoryview | mmap.mmap


def _line_problem(source: str, number: int, tokens: list[str]) -> str | None:
    if not tokens or len(tokens) % _GROUP:
        return f"{source}: line {number} is not groups of {_GROUP} tokens"
    numbers = [t for g in range(0, len(tokens), _GROUP) for t in tokens[g + 1 : g + 3]]
    if not all(t.isascii() and t.isdigit() for t in numbers):
        return f"{source}: line {number}: offsets and sizes are decimal integers"
    return None


def wds_index_problems(  # noqa: PLR0913 -- keyword inputs
    source: str,
    data: bytes,
    index: Index,
    fields: Sequence[str],
    *,
    rows: Rows,
    shard: int,
) -> list[str]:
    """A tar shard's wds2idx text (section 5.1) against the index: one line per sample of the
    shard, one group per present member in field order, each at the index's data offset and
    size; and the text as a writer writes it (single spaces, `\\n` line ends)."""
    text = data.decode("ascii")
    lines = text.split("\n")
    head = lines[0].split(" ")
    count = len(rows)
    if head != [VERSION_TAG, str(count)]:
        return [f"{source}: first line {lines[0]!r}, expected '{VERSION_TAG} {count}'"]
    if lines[-1] != "" or len(lines) != count + 2:
        return [f"{source}: {len(lines) - 2} sample lines and a final newline, expected {count}"]
    problems = []
    for number, (line, row) in enumerate(zip(lines[1:-1], rows.tolist(), strict=True), start=2):
        tokens = line.split(" ")
        problem = _line_problem(source, number, tokens)
        if problem is not None:
            problems.append(problem)
            continue
        found = [(int(tokens[g + 1]), int(tokens[g + 2])) for g in range(0, len(tokens), _GROUP)]
        expected = [
            (int(index.offsets(f)[row]), int(index.sizes(f)[row]))
            for f in fields
            if present(index, f, row)
        ]
        if found != expected:
            problems.append(
                f"{source}: sample {row} (key {key_of(index, row)}) lists members at {found}, "
                f"the index has {expected}"
            )
    return problems


def record_problems(  # noqa: PLR0913 -- keyword inputs
    name: str,
    data: Buffer,
    index: Index,
    schema: Schema,
    *,
    rows: Rows,
    idx_lines: Sequence[tuple[int, int]] | None,
) -> list[str]:
    """The records of a record shard (`data`, named `name`) that its DALI index lists, one per
    sample of the shard in order: each framed and its CRCs right, holding the sample's fields
    in its data."""
    if idx_lines is None:
        return []
    if len(idx_lines) != len(rows):
        return [f"{name}: its DALI index lists {len(idx_lines)} records, the index {len(rows)}"]
    problems = []
    for (offset, size), row in zip(idx_lines, rows.tolist(), strict=True):
        what = f"{name}: record at byte {offset} ({size} bytes, sample {row})"
        if offset + size > len(data):
            problems.append(f"{what}: past the shard's end ({len(data)} bytes)")
            continue
        found = list(scan_records(bytes(data[offset : offset + size]), base=offset))
        if len(found) != 1 or isinstance(found[0], RecordProblem):
            first = found[0] if found else None
            why = first.reason if isinstance(first, RecordProblem) else "not one whole record"
            problems.append(f"{what}: {why}")
            continue
        span: RecordSpan = found[0]
        start = offset + span.data_offset
        problems += outside_problems(
            name,
            index,
            schema.names,
            row,
            span=(start, start + span.size),
            holder=f"its record at byte {offset}",
        )
    return problems
