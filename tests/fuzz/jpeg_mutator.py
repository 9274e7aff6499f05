"""Structure-aware mutations of real JPEGs, driven by a seeded numpy Generator.

The corpus (`base_jpegs`) is made here from synthetic pixels: baseline 4:4:4, 4:2:2 and 4:2:0 and
greyscale files from simplejpeg; progressive ones, files with restart markers and unusual
samplings from OpenCV's libjpeg-turbo (as tests/compiler/images/_progressive.py makes them); one
with EXIF, ICC and comment segments. A case is one of them with 0 to 3 mutations of its frame
header (size, sampling factors, components, precision, frame type), its tables (DQT, DHT, DRI),
its scan headers, restart markers and entropy-coded data, its progressive scan script (scans
dropped, repeated, reordered, cut short, an EOI between them), inserted markers, big APPn
segments, wrong segment lengths, segments spliced from another file, then byte flips and
truncation. `JpegMutator.case(rng)` is a pure function of the generator's state, so that
`(seed, target, number)` names a case for good.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simplejpeg

from tests.compiler.images._progressive import encode, textured

from .jpeg_segments import (
    COM,
    DHT,
    DQT,
    DRI,
    EOI,
    FRAMES,
    RST0,
    SOI,
    SOS,
    Segment,
    frame_index,
    indices,
    parse,
    serialize,
)

Rng = np.random.Generator
Mutation = Callable[[list[Segment], Rng], str | None]  # edits the list; None: not applicable

_SIZES = (0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 255, 256, 4095, 4096, 8192, 16383, 16384)
_HUGE = (20_000, 32_767, 32_768, 65_500, 65_535)
_FACTORS = (1, 1, 1, 2, 2, 2, 3, 4, 4, 0, 5, 8, 15)
_APP_COM = (*range(0xE0, 0xF0), COM)
PROGRESSIVE = (0xC2, 0xC6, 0xCA, 0xCE)
_REPEATED_BYTES = 1_000_000  # at most this much scan data added by repeating one scan
_ODD_MARKERS = (0x01, 0x02, 0x4F, 0xBF, 0xC8, 0xCC, 0xDC, 0xDE, 0xDF, 0xF0, 0xFD)


@dataclass(frozen=True)
class JpegCase:
    """A mutated JPEG: which corpus file it started from and what was done to it."""

    base: str
    data: bytes
    mutations: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.base} + [{'; '.join(self.mutations) or 'unchanged'}]"


def _exif_app1() -> bytes:
    """An APP1 EXIF segment (orientation 1, upright), as cameras write it."""
    tiff = b"II*\x00\x08\x00\x00\x00\x01\x00\x12\x01\x03\x00\x01\x00\x00\x00\x01\x00\x00\x00"
    body = b"Exif\x00\x00" + tiff + b"\x00\x00\x00\x00"
    return b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body


def _with_segments(data: bytes) -> bytes:
    """`data` with EXIF, an ICC-like APP2 and a comment after its SOI."""
    icc = b"ICC_PROFILE\x00\x01\x01" + bytes(range(256)) * 2
    app2 = b"\xff\xe2" + (len(icc) + 2).to_bytes(2, "big") + icc
    comment = b"a comment " * 8
    com = b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment
    return data[:2] + _exif_app1() + app2 + com + data[2:]


@functools.cache
def base_jpegs() -> dict[str, bytes]:
    """The corpus: small real JPEGs of every layout the mutations start from."""

    def simple(h: int, w: int, seed: int, sampling: str, quality: int = 90) -> bytes:
        image = textured(h, w, seed)
        if sampling == "Gray":
            grey = np.ascontiguousarray(image[..., :1])
            return bytes(simplejpeg.encode_jpeg(grey, quality, "GRAY", "Gray"))
        return bytes(simplejpeg.encode_jpeg(image, quality, "RGB", sampling))

    return {
        "baseline-420": simple(120, 160, 1, "420"),
        "baseline-444": simple(64, 96, 2, "444", 95),
        "baseline-422": simple(57, 83, 3, "422"),
        "baseline-grey": simple(72, 64, 4, "Gray"),
        "baseline-420-segments": _with_segments(simple(64, 64, 5, "420")),
        # restart markers on a grid (16 MCUs a row, intervals of 4): the window decoder cuts
        "baseline-420-restart": encode(textured(200, 256, 6), progressive=False, restart=4),
        "progressive-420": encode(textured(96, 128, 7)),
        "progressive-444-restart": encode(textured(80, 80, 8), "4:4:4", restart=1),
        "progressive-grey": encode(textured(64, 48, 9), grey=True),
        "progressive-411": encode(textured(48, 64, 10), "4:1:1"),
        "progressive-440": encode(textured(40, 56, 11), "4:4:0", restart=2),
        "progressive-420-large": encode(textured(384, 512, 12), quality=75),
    }


def _pick(rng: Rng, items: tuple[int, ...] | list[int]) -> int:
    return int(items[int(rng.integers(len(items)))])


def _one_of(rng: Rng, found: list[int]) -> int | None:
    return None if not found else found[int(rng.integers(len(found)))]


def _set_byte(body: bytes, at: int, value: int) -> bytes:
    if at >= len(body):
        return body
    return body[:at] + bytes((value & 0xFF,)) + body[at + 1 :]


# -- the frame header ------------------------------------------------------------------------


def sof_size(segments: list[Segment], rng: Rng) -> str | None:
    f = frame_index(segments)
    if f is None:
        return None
    body = segments[f].body
    which = ("height", "width", "both")[int(rng.integers(3))]
    old = int.from_bytes(body[1:3], "big"), int.from_bytes(body[3:5], "big")
    values = []
    for axis, original in enumerate(old):
        draw = rng.random()
        if draw < 0.35:
            value = _pick(rng, _SIZES)
        elif draw < 0.55:
            value = _pick(rng, _HUGE)
        elif draw < 0.8:
            value = original + _pick(rng, (-9, -8, -1, 1, 7, 8, 9)) or 1
        else:
            value = int(rng.integers(1, 65_536))
        if which == "both" or which == ("height", "width")[axis]:
            values.append(value & 0xFFFF)
        else:
            values.append(original)
    new = body[:1] + values[0].to_bytes(2, "big") + values[1].to_bytes(2, "big") + body[5:]
    segments[f] = segments[f].with_body(new)
    return f"frame size {values[1]} x {values[0]}"


def sof_sampling(segments: list[Segment], rng: Rng) -> str | None:
    f = frame_index(segments)
    if f is None or len(segments[f].body) < 9:
        return None
    body = segments[f].body
    k = int(rng.integers(max(1, (len(body) - 6) // 3)))
    h, v = _pick(rng, _FACTORS), _pick(rng, _FACTORS)
    segments[f] = segments[f].with_body(_set_byte(body, 6 + 3 * k + 1, h << 4 | v))
    return f"component {k} sampling {h}x{v}"


def sof_components(segments: list[Segment], rng: Rng) -> str | None:
    f = frame_index(segments)
    if f is None or len(segments[f].body) < 9:
        return None
    body, variant = segments[f].body, int(rng.integers(6))
    count = body[5]
    if variant == 0:
        value = _pick(rng, (0, 1, 2, 3, 4, 5, 255))
        new, text = _set_byte(body, 5, value), f"component count byte {value}"
    elif variant == 1 and count > 1:
        new, text = _set_byte(body[:-3], 5, count - 1), f"last of {count} components dropped"
    elif variant == 2:
        new = _set_byte(body + bytes((count + 1, 0x11, 0)), 5, count + 1)
        text = f"component {count + 1} added"
    elif variant == 3 and count > 1:
        new, text = _set_byte(body, 9, body[6]), "component 1 has component 0's id"
    elif variant == 4:
        k, table = int(rng.integers(max(count, 1))), _pick(rng, (0, 1, 2, 3, 4, 255))
        new, text = _set_byte(body, 6 + 3 * k + 2, table), f"component {k} quant table {table}"
    else:
        k, ident = int(rng.integers(max(count, 1))), int(rng.integers(256))
        new, text = _set_byte(body, 6 + 3 * k, ident), f"component {k} id {ident}"
    segments[f] = segments[f].with_body(new)
    return text


def sof_precision(segments: list[Segment], rng: Rng) -> str | None:
    f = frame_index(segments)
    if f is None:
        return None
    value = _pick(rng, (0, 1, 7, 9, 12, 16, 255))
    segments[f] = segments[f].with_body(_set_byte(segments[f].body, 0, value))
    return f"precision {value}"


def sof_type(segments: list[Segment], rng: Rng) -> str | None:
    f = frame_index(segments)
    if f is None:
        return None
    code = _pick(rng, FRAMES)
    segments[f] = Segment(code, segments[f].body)
    return f"frame marker FF{code:02X}"


# -- tables ----------------------------------------------------------------------------------


def dqt(segments: list[Segment], rng: Rng) -> str | None:
    at = _one_of(rng, indices(segments, DQT))
    if at is None:
        return None
    body, variant = segments[at].body, int(rng.integers(5))
    if variant == 0:
        value = _pick(rng, (0x00, 0x01, 0x02, 0x03, 0x04, 0x10, 0x13, 0xF0, int(rng.integers(256))))
        segments[at] = segments[at].with_body(_set_byte(body, 0, value))
        return f"DQT precision/id byte 0x{value:02X}"
    if variant == 1:
        value = _pick(rng, (0, 0, 1, 255))
        spots = rng.integers(1, max(len(body), 2), int(rng.integers(1, 16))).tolist()
        for spot in spots:
            body = _set_byte(body, spot, value)
        segments[at] = segments[at].with_body(body)
        return f"DQT entries {spots[:4]}... = {value}"
    if variant == 2:
        keep = int(rng.integers(len(body) + 1))
        segments[at] = segments[at].with_body(body[:keep])
        return f"DQT cut to {keep} bytes"
    if variant == 3:
        del segments[at]
        return "DQT dropped"
    segments.insert(at, Segment(DQT, _set_byte(body, 0, int(rng.integers(16)))))
    return "DQT repeated"


def _dht_body(body: bytes, rng: Rng) -> tuple[bytes, str]:
    """One edit of a DHT segment's tables: class/id, a code-length count, symbols, length."""
    variant = int(rng.integers(4))
    if variant == 0:
        value = _pick(rng, (0x00, 0x01, 0x10, 0x11, 0x02, 0x13, 0x20, 0x04, int(rng.integers(256))))
        return _set_byte(body, 0, value), f"DHT class/id byte 0x{value:02X}"
    if variant == 1:
        spot, value = int(rng.integers(1, 17)), _pick(rng, (0, 1, 2, 3, 17, 100, 255))
        return _set_byte(body, spot, value), f"DHT count of length {spot} = {value}"
    if variant == 2:
        spots = rng.integers(17, max(len(body), 18), int(rng.integers(1, 6))).tolist()
        for spot in spots:
            body = _set_byte(body, spot, int(rng.integers(256)))
        return body, f"DHT symbols at {spots}"
    keep = int(rng.integers(len(body) + 1))
    return body[:keep], f"DHT cut to {keep} bytes"


def dht(segments: list[Segment], rng: Rng) -> str | None:
    found = indices(segments, DHT)
    at = _one_of(rng, found)
    if at is None:
        return None
    choice = rng.random()
    if choice < 0.7:
        body, text = _dht_body(segments[at].body, rng)
        segments[at] = segments[at].with_body(body)
        return text
    other = _one_of(rng, [i for i in found if i != at])
    if choice < 0.85 and other is not None:
        segments[at], segments[other] = segments[other], segments[at]
        return "two DHTs swapped"
    del segments[at]
    return "DHT dropped"


def dri(segments: list[Segment], rng: Rng) -> str | None:
    interval = _pick(rng, (0, 1, 2, 3, 7, 64, 65_535, int(rng.integers(65_536))))
    found = indices(segments, DRI)
    if found and rng.random() < 0.3:
        del segments[found[0]]
        return "DRI dropped"
    if found:
        segments[found[0]] = segments[found[0]].with_body(interval.to_bytes(2, "big"))
        return f"restart interval {interval}"
    first_scan = indices(segments, SOS)
    if not first_scan:
        return None
    segments.insert(first_scan[0], Segment(DRI, interval.to_bytes(2, "big")))
    return f"DRI {interval} inserted"


# -- scans -----------------------------------------------------------------------------------


def sos(segments: list[Segment], rng: Rng) -> str | None:
    at = _one_of(rng, indices(segments, SOS))
    if at is None:
        return None
    body = segments[at].body
    count = body[0] if body else 0
    spot = {
        0: 0,  # component count
        1: 1 + 2 * int(rng.integers(max(count, 1))),  # a component selector
        2: 2 + 2 * int(rng.integers(max(count, 1))),  # its DC/AC table selectors
        3: 1 + 2 * count,  # Ss
        4: 2 + 2 * count,  # Se
        5: 3 + 2 * count,  # Ah/Al
    }[int(rng.integers(6))]
    value = _pick(
        rng, (0, 1, 2, 3, 4, 5, 13, 63, 64, 0x10, 0x11, 0x0D, 0xFF, int(rng.integers(256)))
    )
    segments[at] = segments[at].with_body(_set_byte(body, spot, value))
    return f"scan {at} header byte {spot} = 0x{value:02X}"


def _band(segment: Segment) -> bytes:
    """A scan's components and spectral band (its header without the Ah/Al byte)."""
    return segment.body[:-1]


def point_transform(segments: list[Segment], rng: Rng) -> str | None:
    """Every scan of one band of a progressive file sent `d` bits coarser (Ah and Al raised by
    `d`), so that the progression stays consistent: coefficients the decoder accepts, `d` low
    bits never sent, and values a baseline encoder may find out of its range."""
    f = frame_index(segments)
    first = [i for i in indices(segments, SOS) if segments[i].body[-1] >> 4 == 0]
    at = _one_of(rng, first)
    if f is None or segments[f].code not in PROGRESSIVE or at is None:
        return None
    band, shift = _band(segments[at]), int(rng.integers(1, 13))
    for i in indices(segments, SOS):
        if _band(segments[i]) == band:
            ah, al = segments[i].body[-1] >> 4, segments[i].body[-1] & 15
            ah, al = (ah + shift if ah else 0), al + shift
            if ah > 15 or al > 15:
                return None
            segments[i] = segments[i].with_body(band + bytes((ah << 4 | al,)))
    return f"scans of band {band.hex()} sent {shift} bits coarser"


def _restarts(scan: bytes) -> list[int]:
    return [i for i in range(len(scan) - 1) if scan[i] == 0xFF and RST0 <= scan[i + 1] < RST0 + 8]


def restart(segments: list[Segment], rng: Rng) -> str | None:
    with_rst = [i for i in indices(segments, SOS) if _restarts(segments[i].scan)]
    at = _one_of(rng, with_rst)
    if at is None:
        return None
    scan = segments[at].scan
    spot = _pick(rng, _restarts(scan))
    variant = int(rng.integers(4))
    if variant == 0:
        marker = RST0 + int(rng.integers(8))
        new, text = scan[: spot + 1] + bytes((marker,)) + scan[spot + 2 :], f"RST{marker - RST0}"
    elif variant == 1:
        new, text = scan[:spot] + scan[spot + 2 :], "a restart marker dropped"
    elif variant == 2:
        new, text = scan[:spot] + scan[spot : spot + 2] + scan[spot:], "a restart marker doubled"
    else:
        where = int(rng.integers(len(scan) + 1))
        while 0 < where < len(scan) and scan[where - 1] == 0xFF:
            where -= 1
        inserted = bytes((0xFF, RST0 + int(rng.integers(8))))
        new, text = scan[:where] + inserted + scan[where:], f"restart marker inserted at {where}"
    segments[at] = Segment(SOS, segments[at].body, new)
    return f"scan {at}: {text}"


def scan_drop(segments: list[Segment], rng: Rng) -> str | None:
    at = _one_of(rng, indices(segments, SOS))
    if at is None:
        return None
    del segments[at]
    return f"scan {at} dropped"


def scan_repeat(segments: list[Segment], rng: Rng) -> str | None:
    scans = indices(segments, SOS)
    if not scans:
        return None
    if rng.random() < 0.15:  # many scans: the scan limit's case; the smallest scan keeps it small
        at = min(scans, key=lambda i: len(segments[i].scan))
        times = min(int(rng.integers(100, 800)), _REPEATED_BYTES // (len(segments[at].scan) + 1))
    else:
        at, times = _pick(rng, scans), int(rng.integers(1, 4))
    segments[at + 1 : at + 1] = [segments[at]] * times
    return f"scan {at} repeated {times} times"


def scan_reorder(segments: list[Segment], rng: Rng) -> str | None:
    scans = indices(segments, SOS)
    if len(scans) < 2:
        return None
    order = rng.permutation(len(scans)).tolist()
    moved = [segments[scans[k]] for k in order]
    for at, segment in zip(scans, moved, strict=True):
        segments[at] = segment
    return f"scans reordered {order}"


def scan_cut(segments: list[Segment], rng: Rng) -> str | None:
    scans = indices(segments, SOS)
    if len(scans) < 2:
        return None
    keep = int(rng.integers(1, len(scans)))
    del segments[scans[keep] :]
    segments.append(Segment(EOI))
    return f"only the first {keep} of {len(scans)} scans"


def eoi_between(segments: list[Segment], rng: Rng) -> str | None:
    scans = indices(segments, SOS)
    if len(scans) < 2:
        return None
    k = int(rng.integers(1, len(scans)))
    segments.insert(scans[k], Segment(EOI))
    return f"EOI before scan {k} of {len(scans)}"


def entropy(segments: list[Segment], rng: Rng) -> str | None:
    at = _one_of(rng, [i for i in indices(segments, SOS) if segments[i].scan])
    if at is None:
        return None
    scan, variant = segments[at].scan, int(rng.integers(5))
    where = int(rng.integers(len(scan)))
    run = int(rng.integers(1, 17))
    if variant == 0:
        new, text = scan[:where] + rng.bytes(run) + scan[where + run :], f"{run} random bytes"
    elif variant == 1:
        new, text = scan[:where] + bytes(run) + scan[where + run :], f"{run} zero bytes"
    elif variant == 2:
        new, text = scan[:where] + b"\xff" + scan[where:], "a lone 0xFF"
    elif variant == 3:
        new, text = scan[:where], "data cut"
    else:
        new, text = rng.bytes(len(scan)).replace(b"\xff", b"\xfe"), "all random"
    segments[at] = Segment(SOS, segments[at].body, new)
    return f"scan {at} data at {where}: {text}"


# -- markers and segments --------------------------------------------------------------------


def insert_marker(segments: list[Segment], rng: Rng) -> str | None:
    at = int(rng.integers(1, len(segments) + 1))
    f = frame_index(segments)
    choices: list[tuple[str, Segment]] = [
        ("SOI", Segment(SOI)),
        ("EOI", Segment(EOI)),
        ("RST", Segment(RST0 + int(rng.integers(8)))),
        ("APP", Segment(_pick(rng, _APP_COM), rng.bytes(int(rng.integers(0, 200))))),
        ("odd", Segment(_pick(rng, _ODD_MARKERS), rng.bytes(int(rng.integers(0, 8))))),
        ("SOF", Segment(_pick(rng, FRAMES), rng.bytes(int(rng.integers(0, 20))))),
    ]
    if f is not None:
        choices.append(("second frame header", segments[f]))
    tables = indices(segments, DHT, DQT)
    if tables:
        choices.append(("table copy", segments[_pick(rng, tables)]))
    name, segment = choices[int(rng.integers(len(choices)))]
    segments.insert(at, segment)
    return f"{name} FF{segment.code:02X} inserted at segment {at}"


def big_app(segments: list[Segment], rng: Rng) -> str | None:
    total, count = 0, int(rng.integers(1, 5))
    for k in range(count):
        size = int(rng.integers(4_200 if k == 0 else 100, 20_000))
        body = rng.bytes(size) if rng.random() < 0.5 else bytes(size)
        segments.insert(1, Segment(_pick(rng, _APP_COM), body))
        total += size
    return f"{count} APPn/COM segments of {total} bytes"


def bad_length(segments: list[Segment], rng: Rng) -> str | None:
    with_length = [i for i, s in enumerate(segments) if s.code not in (SOI, EOI) and s.body]
    at = _one_of(rng, with_length)
    if at is None:
        return None
    true = len(segments[at].body) + 2
    length = _pick(rng, (0, 1, 2, true - 1, true + 1, true + 100, 65_535))
    segments[at] = Segment(segments[at].code, segments[at].body, segments[at].scan, length)
    return f"FF{segments[at].code:02X} length {length} (true {true})"


def drop_segment(segments: list[Segment], rng: Rng) -> str | None:
    at = int(rng.integers(1, len(segments))) if len(segments) > 1 else None
    if at is None:
        return None
    code = segments.pop(at).code
    return f"FF{code:02X} segment {at} dropped"


def splice(segments: list[Segment], rng: Rng) -> str | None:
    """A table or frame header of another corpus file in place of this one's."""
    corpus = list(base_jpegs().values())
    donor = parse(corpus[int(rng.integers(len(corpus)))])
    code = _pick(rng, (DHT, DQT, SOS, *FRAMES))
    mine = indices(segments, *FRAMES) if code in FRAMES else indices(segments, code)
    theirs = indices(donor, *FRAMES) if code in FRAMES else indices(donor, code)
    at, given = _one_of(rng, mine), _one_of(rng, theirs)
    if at is None or given is None:
        return None
    scan = segments[at].scan
    segments[at] = Segment(donor[given].code, donor[given].body, scan)
    return f"FF{donor[given].code:02X} spliced from another file into segment {at}"


STRUCTURAL: dict[str, tuple[Mutation, int]] = {  # name: (mutation, weight)
    "sof_size": (sof_size, 4),
    "sof_sampling": (sof_sampling, 3),
    "sof_components": (sof_components, 2),
    "sof_precision": (sof_precision, 1),
    "sof_type": (sof_type, 2),
    "dqt": (dqt, 2),
    "dht": (dht, 3),
    "sos": (sos, 3),
    "point_transform": (point_transform, 1),
    "dri": (dri, 2),
    "restart": (restart, 2),
    "scan_drop": (scan_drop, 2),
    "scan_repeat": (scan_repeat, 2),
    "scan_reorder": (scan_reorder, 1),
    "scan_cut": (scan_cut, 2),
    "eoi_between": (eoi_between, 1),
    "entropy": (entropy, 3),
    "insert_marker": (insert_marker, 2),
    "big_app": (big_app, 2),
    "bad_length": (bad_length, 1),
    "drop_segment": (drop_segment, 1),
    "splice": (splice, 1),
}


def flip(data: bytes, rng: Rng) -> tuple[bytes, str]:
    out = bytearray(data)
    header_end = data.find(b"\xff\xda")
    top = header_end if header_end > 2 and rng.random() < 0.5 else len(data)
    spots = sorted(rng.integers(2, max(top, 3), int(rng.integers(1, 9))).tolist())
    for spot in spots:
        if spot < len(out):
            out[spot] ^= int(rng.integers(1, 256))
    return bytes(out), f"bytes flipped at {spots}"


def truncate(data: bytes, rng: Rng) -> tuple[bytes, str]:
    keep = int(rng.integers(0, len(data)))
    if rng.random() < 0.5:
        return data[:keep] + b"\xff\xd9", f"cut to {keep} bytes + EOI"
    return data[:keep], f"cut to {keep} bytes"


BYTE_LEVEL: dict[str, tuple[Callable[[bytes, Rng], tuple[bytes, str]], int]] = {
    "flip": (flip, 4),
    "truncate": (truncate, 2),
}
KINDS = (*STRUCTURAL, *BYTE_LEVEL)


class JpegMutator:
    """Draws a case from the corpus: a file, then up to three mutations (or none, 1 in 20)."""

    def __init__(self) -> None:
        self.corpus = base_jpegs()
        self.names = sorted(self.corpus)
        self.parsed = {name: parse(data) for name, data in self.corpus.items()}
        kinds = [*STRUCTURAL, *BYTE_LEVEL]
        weights = np.array(
            [w for _, w in STRUCTURAL.values()] + [w for _, w in BYTE_LEVEL.values()], float
        )
        self.kinds, self.weights = kinds, weights / weights.sum()

    def case(self, rng: Rng) -> JpegCase:
        name = self.names[int(rng.integers(len(self.names)))]
        count = _pick(rng, (0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3))
        chosen = [self.kinds[int(k)] for k in rng.choice(len(self.kinds), count, p=self.weights)]
        segments = list(self.parsed[name])
        done: list[str] = []
        for kind in (k for k in chosen if k in STRUCTURAL):
            text = STRUCTURAL[kind][0](segments, rng)
            if text is not None:
                done.append(f"{kind}: {text}")
        data = serialize(segments)
        for kind in (k for k in chosen if k in BYTE_LEVEL):
            data, text = BYTE_LEVEL[kind][0](data, rng)
            done.append(f"{kind}: {text}")
        return JpegCase(name, data, tuple(done))
