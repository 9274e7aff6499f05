"""JPEGs written byte by byte, for the tests of the C extensions' limits: grey images whose
coefficients are all zero (so any size costs a few bits per block), with any progressive scan
script, a DC coefficient that decoders accept and encoders refuse, and tools to cut scans out of
a real progressive file (an EOI between scans, a scan dropped)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

SOI, EOI = b"\xff\xd8", b"\xff\xd9"
DC_TABLE = b"\x00" + bytes([1] + [0] * 15) + b"\x00"  # DC table 0: symbol 0 (no change), "0"
# AC table 0: EOB0..EOB14 (runs of 1 to 32767 empty blocks), 4-bit codes 0000..1110
AC_TABLE = b"\x10" + bytes([0, 0, 0, 15] + [0] * 12) + bytes(r << 4 for r in range(15))
MAX_RUN = (1 << 15) - 1


def segment(code: int, payload: bytes) -> bytes:
    return bytes([0xFF, code]) + struct.pack(">H", len(payload) + 2) + payload


def comments(size: int) -> bytes:
    """COM segments holding `size` bytes in all."""
    out, left = b"", size
    while left > 0:
        part = min(left, 60_000)
        out += segment(0xFE, b"c" * part)
        left -= part
    return out


class _Bits:
    def __init__(self) -> None:
        self.bits: list[str] = []

    def put(self, value: int, length: int) -> None:
        if length:
            self.bits.append(format(value, f"0{length}b"))

    def data(self) -> bytes:
        """The bits padded with ones, 0xFF stuffed."""
        text = "".join(self.bits)
        text += "1" * (-len(text) % 8)
        raw = int(text, 2).to_bytes(len(text) // 8, "big") if text else b""
        return raw.replace(b"\xff", b"\xff\x00")


def _grey_frame(height: int, width: int, marker: int) -> bytes:
    return (
        segment(0xDB, b"\x00" + b"\x01" * 64)  # every quantizer 1
        + segment(marker, bytes([8]) + struct.pack(">HH", height, width) + b"\x01\x01\x11\x00")
    )


def dc_out_of_range(markers: int = 0) -> bytes:
    """A grey 8x8 baseline JPEG whose one DC coefficient is 4095: libjpeg decodes it, while its
    encoder refuses it ("DCT coefficient out of range": at most 11 bits of difference). With
    `markers` bytes of COM segments first."""
    dc_table = b"\x00" + bytes([1] + [0] * 15) + bytes([12])  # one code, "0": 12-bit difference
    ac_table = b"\x10" + bytes([1] + [0] * 15) + b"\x00"  # one code, "0": EOB
    bits = _Bits()
    bits.put(0, 1)
    bits.put(4095, 12)
    bits.put(0, 1)
    return (
        SOI
        + comments(markers)
        + _grey_frame(8, 8, 0xC0)
        + segment(0xC4, dc_table)
        + segment(0xC4, ac_table)
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + bits.data()
        + EOI
    )


@dataclass(frozen=True)
class Scan:
    """A progressive scan of the grey component: coefficients ss..se, bits ah -> al."""

    ss: int
    se: int
    ah: int
    al: int


def complete_script(count: int) -> list[Scan]:
    """A valid progressive script of exactly `count` scans (2 to 896) after which every
    coefficient is known to its last bit: DC and AC bands, each sent at some bit position and
    refined down to bit 0."""
    if not 2 <= count <= 64 + 64 * 13:
        raise ValueError(f"a complete grey script has 2 to 896 scans, got {count}")
    if count <= 64:
        edges = [1 + 63 * i // (count - 1) for i in range(count)]
        bands = [(0, 0)] + [(edges[i], edges[i + 1] - 1) for i in range(count - 1)]
        return [Scan(ss, se, 0, 0) for ss, se in bands]
    extra, script = count - 64, []
    for k in range(64):
        first = min(13, extra)
        extra -= first
        script.append(Scan(k, k, 0, first))
        script += [Scan(k, k, al + 1, al) for al in reversed(range(first))]
    return script


def progressive_grey(height: int, width: int, script: list[Scan], *, eoi: bool = True) -> bytes:
    """A grey progressive JPEG of zero coefficients, one scan per entry of `script`; all the
    tables come before the first scan. `eoi=False` leaves the end marker off."""
    blocks = -(-height // 8) * -(-width // 8)
    out = SOI + _grey_frame(height, width, 0xC2)
    out += segment(0xC4, DC_TABLE) + segment(0xC4, AC_TABLE)
    for scan in script:
        out += segment(0xDA, bytes([1, 1, 0x00, scan.ss, scan.se, scan.ah << 4 | scan.al]))
        out += _scan_data(scan, blocks)
    return out + (EOI if eoi else b"")


def _scan_data(scan: Scan, blocks: int) -> bytes:
    if scan.ss == 0:  # DC: a Huffman code "0" (first) or one raw bit (refinement) per block
        return b"\x00" * (blocks // 8) + (bytes([0xFF >> (blocks % 8)]) if blocks % 8 else b"")
    bits = _Bits()
    for run in _runs(blocks):
        r = run.bit_length() - 1
        bits.put(r, 4)  # the code of EOBr is r itself (AC_TABLE)
        bits.put(run - (1 << r), r)
    return bits.data()


def _runs(blocks: int) -> Iterator[int]:
    while blocks > 0:
        run = min(blocks, MAX_RUN)
        yield run
        blocks -= run


def split_scans(data: bytes) -> tuple[bytes, list[bytes], bytes]:
    """A real JPEG as (everything before the first SOS, [each scan with the segments between it
    and the previous scan], everything after the last scan): `head + b"".join(scans[:k]) + EOI`
    keeps only the first k scans, and a file without one of them still walks."""
    pieces: list[bytes] = []
    head_end, pos, start = 0, 2, 0
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            raise ValueError(f"expected a marker at offset {pos}, found {data[pos]:#04x}")
        code = data[pos + 1]
        if code == 0xD9:
            break
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        pos += 2 + length
        if code == 0xDA:
            if not pieces:
                head_end = start = pos - 2 - length
            pos = _entropy_end(data, pos)
            pieces.append(data[start:pos])
            start = pos
    if not pieces:
        raise ValueError("no scan")
    return data[:head_end], pieces, data[start:]


def first_scans(data: bytes, count: int) -> bytes:
    """`data` with only its first `count` scans, then EOI: an end marker between scans."""
    head, scans, _ = split_scans(data)
    return head + b"".join(scans[:count]) + EOI


def without_scan(data: bytes, index: int) -> bytes:
    """`data` without its scan number `index` (from 0): the file still walks."""
    head, scans, tail = split_scans(data)
    return head + b"".join(scans[:index] + scans[index + 1 :]) + tail


def _entropy_end(data: bytes, pos: int) -> int:
    """Where the entropy-coded data starting at `pos` ends: the next marker that is not a
    stuffed 0xFF or a restart marker."""
    while True:
        pos = data.index(b"\xff", pos)
        if data[pos + 1] == 0 or 0xD0 <= data[pos + 1] <= 0xD7:
            pos += 2
        else:
            return pos
