"""DALI's wds2idx v1.2 index of one tar shard (formats/SPEC.md section 5)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .errors import ShardFormatError, UnsupportedVersionError
from .tar_shard import BLOCK, MemberLocation

VERSION_TAG = "v1.2"


def wds_index_line(members: Sequence[MemberLocation]) -> str:
    """The index line of one sample (its members in tar order), without the newline."""
    groups = []
    for m in members:
        if " " in m.name:
            raise ShardFormatError(f"member {m.name!r}: a space would break the DALI index")
        groups.append(f"{m.ext} {m.data_offset} {m.size} {m.name}")
    return " ".join(groups)


def join_wds_index(lines: Sequence[str]) -> str:
    """The index text from each sample's line (`wds_index_line`), in tar order."""
    return "\n".join([f"{VERSION_TAG} {len(lines)}", *lines]) + "\n"


def format_wds_index(samples: Sequence[Sequence[MemberLocation]]) -> str:
    """The index text for a shard whose samples hold these members, in tar order."""
    return join_wds_index([wds_index_line(members) for members in samples])


_HEAD_WORDS = 2  # the first line: the version tag and the number of samples


def parse_wds_index(text: str, source: str) -> list[list[MemberLocation]]:
    """Members of every sample listed by an index text; `source` names the file in errors."""
    lines = text.splitlines()
    head = lines[0].split() if lines else []
    if len(head) != _HEAD_WORDS or not head[1].isdigit():
        raise ShardFormatError(f"{source}: first line should be 'v1.2 <samples>', found {head}")
    if head[0] != VERSION_TAG:
        raise UnsupportedVersionError(f"{source}: index version {head[0]!r}, supported: v1.2")
    count = int(head[1])
    if len(lines) - 1 != count:
        raise ShardFormatError(
            f"{source}: header announces {count} samples, found {len(lines) - 1}"
        )
    samples = []
    for number, line in enumerate(lines[1:], start=2):
        tokens = line.split()
        if not tokens or len(tokens) % 4:
            raise ShardFormatError(f"{source}: line {number} is not groups of 4 tokens")
        members = []
        for g in range(0, len(tokens), 4):
            ext, offset, size, name = tokens[g : g + 4]
            if not (offset.isdigit() and size.isdigit()) or int(offset) % BLOCK:
                raise ShardFormatError(f"{source}: line {number}: bad offset/size {offset} {size}")
            data = int(offset)
            members.append(MemberLocation(name, data - BLOCK, data, int(size)))
            if members[-1].ext != ext:
                raise ShardFormatError(f"{source}: line {number}: {name!r} is not a .{ext} member")
        samples.append(members)
    return samples


def read_wds_index(path: str | os.PathLike[str]) -> list[list[MemberLocation]]:
    return parse_wds_index(Path(path).read_text(encoding="ascii"), str(path))
