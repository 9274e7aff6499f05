"""A JPEG as a list of segments, to edit its structure and write it back.

Only well-formed encoder output is parsed (the fuzz corpus); mutations edit the list, and
`serialize` writes whatever the list holds, lengths included, without checking anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

SOI, EOI, SOS, DHT, DQT, DRI, COM = 0xD8, 0xD9, 0xDA, 0xC4, 0xDB, 0xDD, 0xFE
RST0 = 0xD0
FRAMES = (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF)
STANDALONE = frozenset({SOI, EOI, 0x01, *range(RST0, RST0 + 8)})  # markers with no length
# The end of a scan's entropy-coded data: 0xFF (after any fill 0xFFs), then a byte that is
# not stuffing (0x00) or a restart marker (0xD0-0xD7).
_SCAN_END = re.compile(rb"\xff+[^\x00\xd0-\xd7\xff]")
_MAX_BODY = 0xFFFF - 2


@dataclass(frozen=True)
class Segment:
    """One marker: its code, the bytes after its length field, for a scan (SOS) the
    entropy-coded data that follows the header, and a length written instead of the true one."""

    code: int
    body: bytes = b""
    scan: bytes = b""
    length: int | None = None  # None: len(body) + 2

    def with_body(self, body: bytes) -> Segment:
        return replace(self, body=body)


def parse(data: bytes) -> list[Segment]:
    """The segments of a well-formed JPEG, SOI to EOI; ValueError for anything else."""
    if not data.startswith(b"\xff\xd8"):
        raise ValueError("not a JPEG: no SOI")
    segments, pos = [Segment(SOI)], 2
    while pos < len(data):
        if data[pos] != 0xFF:
            raise ValueError(f"expected a marker at {pos}")
        code = data[pos + 1]
        if code == EOI:
            segments.append(Segment(EOI))
            return segments
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        body = data[pos + 4 : pos + 2 + length]
        pos += 2 + length
        scan = b""
        if code == SOS:
            end = _SCAN_END.search(data, pos)
            stop = len(data) if end is None else end.end() - 2
            scan, pos = data[pos:stop], stop
        segments.append(Segment(code, body, scan))
    raise ValueError("no EOI")


def serialize(segments: list[Segment]) -> bytes:
    """The bytes of `segments`, each length as recorded (or the body's true one)."""
    out = bytearray()
    for s in segments:
        out += bytes((0xFF, s.code))
        if s.code in STANDALONE:
            continue
        length = len(s.body) + 2 if s.length is None else s.length
        out += (length & 0xFFFF).to_bytes(2, "big") + s.body[:_MAX_BODY] + s.scan
    return bytes(out)


def indices(segments: list[Segment], *codes: int) -> list[int]:
    """Positions of the segments whose code is one of `codes`."""
    return [i for i, s in enumerate(segments) if s.code in codes]


def frame_index(segments: list[Segment]) -> int | None:
    """Position of the frame header (SOF), None if there is none."""
    found = indices(segments, *FRAMES)
    return found[0] if found else None


def frame_size(data: bytes) -> tuple[int, int, int]:
    """`(height, width, components)` claimed by the first SOF marker in `data` (0s if none):
    what a decoder would allocate for, found without trusting anything else."""
    for match in re.finditer(rb"\xff[\xc0-\xc3\xc5-\xc7\xc9-\xcb\xcd-\xcf]", data):
        at = match.start()
        if at + 10 <= len(data):
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            width = int.from_bytes(data[at + 7 : at + 9], "big")
            return height, width, data[at + 9]
    return 0, 0, 0
