"""The checks of the small files beside the shards (formats/SPEC.md sections 2.3, 5 and 9),
shared by `verify_dataset` and `verify_remote`: a file's size and SHA-256 against the manifest,
a DALI index's bytes against the text a writer writes for what it lists (which covers the bytes
of an index whose manifest records no SHA-256 of it), and the rejects file: each line, the
count, the file against the manifest.

Each check takes the file's bytes (read whole: these files are small) and a name for messages,
and returns its problems as lines naming the file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from fastpack.formats import Manifest
from fastpack.formats.manifest import first_difference
from fastpack.formats.tar_shard import MemberLocation
from fastpack.formats.tfrecord import format_record_index
from fastpack.formats.wds_index import format_wds_index

_REJECT_KEYS = (("path", "reason"), ("path", "field", "reason"))


def checksum_problem(name: str, data: bytes, size: int, sha256: str) -> str | None:
    """`data`'s size, then its SHA-256, against what the manifest records for `name`."""
    if len(data) != size:
        return f"{name}: {len(data)} bytes, the manifest records {size}"
    if (digest := hashlib.sha256(data).hexdigest()) != sha256:
        return f"{name}: sha256 {digest}, the manifest records {sha256}"
    return None


def wds_text_problem(
    name: str, data: bytes, samples: Sequence[Sequence[MemberLocation]]
) -> str | None:
    """A wds2idx index whose bytes are not the text a writer writes for the `samples` parsed
    from it (another whitespace, a leading zero)."""
    return _text_problem(name, data, format_wds_index(samples).encode("ascii"))


def record_text_problem(name: str, data: bytes, lines: Sequence[tuple[int, int]]) -> str | None:
    """A tfrecord2idx index whose bytes are not the text a writer writes for its `lines`."""
    return _text_problem(name, data, format_record_index(lines).encode("ascii"))


def _text_problem(name: str, data: bytes, expected: bytes) -> str | None:
    if data == expected:
        return None
    where = first_difference(data, expected)
    return f"{name}: not the text a writer writes for what it lists; {where}"


def rejects_problems(name: str, data: bytes | None, manifest: Manifest) -> list[str]:
    """The rejects file (`data`, None where there is none) against the manifest: its size and
    SHA-256 where listed, each line one reject as SPEC section 2.3 writes it, and as many lines
    as `stats.rejected` says."""
    listed, rejected = manifest.rejects, manifest.stats.get("rejected")
    if data is None:
        if listed is not None:
            return [f"{name}: file not found; the manifest lists it"]
        if rejected:
            return [f"{name}: file not found; the manifest counts {rejected} rejected inputs"]
        return []
    problems = []
    if listed is not None:
        problem = checksum_problem(name, data, listed.bytes, listed.sha256)
        problems += [problem] if problem else []
    elif manifest.checksum:
        problems.append(f"{name}: not listed in the manifest, which lists every file it records")
    lines, problem = _reject_lines(name, data)
    if problem is not None:
        return [*problems, problem]
    if rejected is not None and lines != rejected:
        problems.append(f"{name}: {lines} lines, the manifest's stats.rejected is {rejected}")
    return problems


def _reject_lines(name: str, data: bytes) -> tuple[int, str | None]:
    """The number of lines, and the first line that is not a reject as writers write it."""
    if data and not data.endswith(b"\n"):
        return 0, f"{name}: the last line has no newline"
    lines = data.split(b"\n")[:-1]
    for number, line in enumerate(lines, start=1):
        problem = _reject_problem(line)
        if problem is not None:
            return len(lines), f"{name}: line {number}: {problem}"
    return len(lines), None


def _reject_problem(line: bytes) -> str | None:
    try:
        entry: Any = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return f"not UTF-8 JSON ({e})"
    if not isinstance(entry, dict) or tuple(entry) not in _REJECT_KEYS:
        keys = list(entry) if isinstance(entry, dict) else type(entry).__name__
        return f"{keys}, expected an object of 'path', ('field',) 'reason'"
    if not all(isinstance(v, str) for v in entry.values()):
        return "a value that is not a string"
    expected = json.dumps(entry, ensure_ascii=False).encode("utf-8")
    if line != expected:
        return f"not written as writers write it; {first_difference(line, expected)}"
    return None
