"""JPEG bytes for the wild corpus, made without an encoder per file.

- `RowPool`: baseline JPEG tiles (OpenCV, standard Huffman tables, one restart interval per row of
  MCUs), cut into their restart segments. A segment is byte-aligned and resets the DC
  predictions, so any sequence of segments of one pool, joined by restart markers, is a valid
  baseline JPEG: `RowPool.splice` makes a distinct image from a few thousand tiles in
  microseconds.
- `progressive_jpeg`: a small progressive JPEG writer (Huffman, first scans only, every
  component sampled 1x1) for files no encoder makes: a DCT coefficient out of the encoder's range,
  a scan repeated thousands of times.
- Marker helpers: the segments of a JPEG, an APPn/COM segment, the scans of a progressive file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

SOI, EOI = b"\xff\xd8", b"\xff\xd9"
_SOS, _SOF0, _SOF2, _DRI = 0xDA, 0xC0, 0xC2, 0xDD
_RST = re.compile(rb"\xff[\xd0-\xd7]")
_MCU = 16  # 4:2:0: an MCU is 16 x 16 pixels
_ROWS_PER_TILE = 8
_EOB_RUN_MAX = 0x7FFF  # the longest end-of-band run one symbol codes
_ZERO_RUN_MAX = 15  # the longest run of zeros one AC symbol codes; 0xF0 codes 16
_BYTE_BITS = 8
_FF = 0xFF  # a byte of entropy-coded data that 0x00 must follow


def segment(marker: int, payload: bytes) -> bytes:
    """A marker segment: `FF marker`, the big-endian length (counting itself), the payload."""
    if len(payload) > 0xFFFF - 2:
        raise ValueError(f"a segment holds at most 65533 bytes, not {len(payload)}")
    return bytes([0xFF, marker]) + (len(payload) + 2).to_bytes(2, "big") + payload


def segments(data: bytes) -> list[tuple[int, int, int]]:
    """`(offset, marker, end)` of every marker segment of `data` up to its first scan header
    (the SOS included; its `end` is the end of the SOS header)."""
    found, pos = [], 2
    while pos + 4 <= len(data):
        marker = data[pos + 1]
        end = pos + 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        found.append((pos, marker, end))
        if marker == _SOS:
            break
        pos = end
    return found


def scans(data: bytes) -> list[tuple[int, int]]:
    """`(start, end)` of each scan of `data`: its SOS segment and entropy-coded data, up to the
    next marker that is neither stuffing nor a restart (the next scan, a table, the EOI)."""
    starts = [m.start() for m in re.finditer(rb"\xff\xda", data)]
    found = []
    for start in starts:
        header_end = start + 2 + int.from_bytes(data[start + 2 : start + 4], "big")
        after = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]").search(data, header_end)
        found.append((start, after.start() if after else len(data)))
    return found


def scan_header(data: bytes, start: int) -> tuple[tuple[int, ...], int, int, int, int]:
    """(component ids, Ss, Se, Ah, Al) of the scan header at `start`."""
    count = data[start + 4]
    ids = tuple(data[start + 5 + 2 * k] for k in range(count))
    ss, se, approximation = data[start + 5 + 2 * count : start + 8 + 2 * count]
    return ids, ss, se, approximation >> 4, approximation & 0x0F


def with_frame_size(data: bytes, height: int, width: int) -> bytes:
    """`data` with its frame header (SOF0 or SOF2) claiming `height` x `width`."""
    for pos, marker, _ in segments(data):
        if marker in (_SOF0, _SOF2):
            size = height.to_bytes(2, "big") + width.to_bytes(2, "big")
            return data[: pos + 5] + size + data[pos + 9 :]
    raise ValueError("no SOF0 or SOF2 frame header")


def with_sampling(data: bytes, component: int, factors: int) -> bytes:
    """`data` with the sampling factors byte (`0xHV`) of frame component `component` replaced."""
    for pos, marker, _ in segments(data):
        if marker in (_SOF0, _SOF2):
            at = pos + 10 + 3 * component + 1
            return data[:at] + bytes([factors]) + data[at + 1 :]
    raise ValueError("no SOF0 or SOF2 frame header")


def after_soi(data: bytes, inserted: bytes) -> bytes:
    """`data` with `inserted` (marker segments) right after its SOI."""
    return data[:2] + inserted + data[2:]


def encode_jpeg(
    rgb: npt.NDArray[np.uint8],
    *,
    quality: int,
    progressive: bool = False,
    restart: int = 0,
    sampling: int = cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
) -> bytes:
    """An RGB image as a JPEG by OpenCV (libjpeg-turbo), standard Huffman tables."""
    params = [
        cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive),
        cv2.IMWRITE_JPEG_RST_INTERVAL, restart, cv2.IMWRITE_JPEG_SAMPLING_FACTOR, sampling,
    ]  # fmt: skip
    ok, buffer = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), params)
    if not ok:
        raise RuntimeError("OpenCV could not encode a JPEG")
    return bytes(buffer.tobytes())


def texture(height: int, width: int, rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    """A tinted gradient under colour noise, with a few blobs: every coefficient band used."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    tint = rng.uniform(0.3, 1.0, 3).astype(np.float32)
    base = np.stack([x / width, y / height, (x + y) / (width + height)], axis=-1) * 255 * tint
    for _ in range(3):
        cy, cx, r = rng.uniform(0, height), rng.uniform(0, width), rng.uniform(4, 24)
        base[(y - cy) ** 2 + (x - cx) ** 2 < r * r] = rng.uniform(0, 255, 3)
    return np.clip(base + rng.normal(0, 22, (height, width, 3)), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class RowPool:
    """Restart segments (one MCU row of `width` pixels each) of tiles with one header."""

    width: int
    header: bytes  # SOI up to and including the SOS header; its SOF says 8 rows
    rows: tuple[bytes, ...]

    @classmethod
    def make(cls, width: int, tiles: int, quality: int, rng: np.random.Generator) -> RowPool:
        if width % _MCU:
            raise ValueError(f"a row pool's width is a multiple of {_MCU}, not {width}")
        header, rows = b"", []
        for _ in range(tiles):
            data = encode_jpeg(
                texture(_MCU * _ROWS_PER_TILE, width, rng),
                quality=quality,
                restart=width // _MCU,
            )
            _, _, sos_end = segments(data)[-1]
            if header and data[:sos_end] != header:
                raise RuntimeError("OpenCV wrote tiles of one pool with different headers")
            header = data[:sos_end]
            body = data[sos_end : data.rindex(EOI)]
            cut = _RST.split(body)
            if len(cut) != _ROWS_PER_TILE:
                raise RuntimeError(f"a tile has {len(cut)} restart segments, not {_ROWS_PER_TILE}")
            rows.extend(cut)
        return cls(width, header, tuple(rows))

    def splice(self, picks: Sequence[int]) -> bytes:
        """The JPEG of the rows `picks` (indexes into `rows`), top to bottom."""
        parts = [with_frame_size(self.header, _MCU * len(picks), self.width)]
        for k, pick in enumerate(picks):
            if k:
                parts.append(bytes([0xFF, 0xD0 + (k - 1) % 8]))
            parts.append(self.rows[pick])
        parts.append(EOI)
        return b"".join(parts)


# --- a progressive writer: first scans (Ah = Al = 0), every component 1x1 -------------------

_ZIGZAG = np.array(
    [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27,
     20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58,
     59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63],
)  # fmt: skip


def _dct_matrix() -> npt.NDArray[np.float64]:
    u, x = np.mgrid[0:8, 0:8]
    m: npt.NDArray[np.float64] = np.sqrt(2 / 8) * np.cos((2 * x + 1) * u * math.pi / 16)
    m[0] /= math.sqrt(2)
    return m


_DCT = _dct_matrix()


def quantized_blocks(
    rgb: npt.NDArray[np.uint8], quant: npt.NDArray[np.int64]
) -> list[npt.NDArray[np.int64]]:
    """Per component (Y, Cb, Cr): the quantized DCT blocks of `rgb`, shape (rows, cols, 64) in
    zigzag order. `quant` is the 64 quantization steps in natural order."""
    height, width = rgb.shape[:2]
    padded = np.pad(rgb, ((0, -height % 8), (0, -width % 8), (0, 0)), mode="edge")
    ycc = cv2.cvtColor(padded, cv2.COLOR_RGB2YCrCb).astype(np.float64)[..., [0, 2, 1]] - 128
    rows, cols = padded.shape[0] // 8, padded.shape[1] // 8
    found = []
    for c in range(3):
        blocks = ycc[..., c].reshape(rows, 8, cols, 8).transpose(0, 2, 1, 3)
        coefficients = np.einsum("ux,rcxy,vy->rcuv", _DCT, blocks, _DCT).reshape(rows, cols, 64)
        found.append(np.rint(coefficients / quant).astype(np.int64)[..., _ZIGZAG])
    return found


@dataclass(frozen=True)
class Scan:
    """A first scan (Ah = Al = 0) of `components` over zigzag positions `ss` to `se`."""

    components: tuple[int, ...]
    ss: int
    se: int


Symbol = tuple[int, int, int]  # (Huffman symbol, extra bits' value, extra bits' count)


def _magnitude(value: int) -> tuple[int, int]:
    """JPEG's (size category, extra bits) of a non-zero coefficient or difference."""
    size = abs(value).bit_length()
    return size, value if value > 0 else value + (1 << size) - 1


def _dc_symbols(blocks: Sequence[npt.NDArray[np.int64]], scan: Scan) -> list[Symbol]:
    rows, cols = blocks[0].shape[:2]
    dc = [b[..., 0].ravel().tolist() for b in blocks]
    previous = dict.fromkeys(scan.components, 0)
    found = []
    for k in range(rows * cols):
        for c in scan.components:
            diff, previous[c] = dc[c][k] - previous[c], dc[c][k]
            size, bits = _magnitude(diff) if diff else (0, 0)
            found.append((size, bits, size))
    return found


def _eob_run(run: int) -> Symbol:
    r = run.bit_length() - 1
    return r << 4, run - (1 << r), r


def _ac_symbols(block_list: npt.NDArray[np.int64], scan: Scan) -> list[Symbol]:
    found: list[Symbol] = []
    run_of_eobs = 0
    band = block_list[:, scan.ss : scan.se + 1]
    nonzero = band != 0
    for values, mask in zip(band.tolist(), nonzero.tolist(), strict=True):
        if not any(mask):
            run_of_eobs += 1
            if run_of_eobs == _EOB_RUN_MAX:
                found.append(_eob_run(run_of_eobs))
                run_of_eobs = 0
            continue
        if run_of_eobs:
            found.append(_eob_run(run_of_eobs))
            run_of_eobs = 0
        zeros = 0
        last = max(k for k, m in enumerate(mask) if m)
        for value in values[: last + 1]:
            if value == 0:
                zeros += 1
                continue
            while zeros > _ZERO_RUN_MAX:
                found.append((0xF0, 0, 0))
                zeros -= 16
            size, bits = _magnitude(value)
            found.append(((zeros << 4) | size, bits, size))
            zeros = 0
        if last < len(values) - 1:
            run_of_eobs += 1
            if run_of_eobs == _EOB_RUN_MAX:
                found.append(_eob_run(run_of_eobs))
                run_of_eobs = 0
    if run_of_eobs:
        found.append(_eob_run(run_of_eobs))
    return found


def _huffman_table(symbols: Sequence[Symbol]) -> tuple[bytes, dict[int, tuple[int, int]]]:
    """A table that gives every symbol used a code of one length (canonical, never all ones):
    its DHT payload after the class/id byte, and symbol -> (code, length)."""
    used = sorted({s for s, _, _ in symbols}) or [0]
    length = len(used).bit_length()
    counts = [0] * 16
    counts[length - 1] = len(used)
    codes = {s: (k, length) for k, s in enumerate(used)}
    return bytes(counts) + bytes(used), codes


class _Bits:
    """Entropy-coded bytes: bits packed most significant first, 0xFF stuffed, 1-padded."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.acc = 0
        self.count = 0

    def put(self, value: int, count: int) -> None:
        self.acc = (self.acc << count) | value
        self.count += count
        while self.count >= _BYTE_BITS:
            self.count -= _BYTE_BITS
            byte = (self.acc >> self.count) & _FF
            self.out.append(byte)
            if byte == _FF:
                self.out.append(0)
        self.acc &= (1 << self.count) - 1

    def finish(self) -> bytes:
        if self.count:
            pad = _BYTE_BITS - self.count
            self.put((1 << pad) - 1, pad)
        return bytes(self.out)


def _scan_parts(blocks: Sequence[npt.NDArray[np.int64]], scan: Scan) -> tuple[int, bytes, bytes]:
    """The scan's Huffman table class, its table (DHT payload after the class byte), and its SOS
    segment + entropy-coded data."""
    dc = scan.ss == 0
    if dc and scan.se != 0:
        raise ValueError("a DC scan covers position 0 alone (Ss = Se = 0)")
    if not dc and len(scan.components) != 1:
        raise ValueError("an AC scan covers one component")
    if dc:
        symbols = _dc_symbols(blocks, scan)
    else:
        c = scan.components[0]
        symbols = _ac_symbols(blocks[c].reshape(-1, 64), scan)
    table, codes = _huffman_table(symbols)
    selectors = b"".join(bytes([c + 1, 0x00]) for c in scan.components)
    header = bytes([len(scan.components)]) + selectors + bytes([scan.ss, scan.se, 0])
    bits = _Bits()
    for symbol, extra, count in symbols:
        bits.put(*codes[symbol])
        if count:
            bits.put(extra, count)
    return 0 if dc else 1, table, segment(_SOS, header) + bits.finish()


def default_scans(components: int = 3) -> list[Scan]:
    """DC of every component in one scan, then each component's AC 1-63."""
    return [Scan(tuple(range(components)), 0, 0)] + [Scan((c,), 1, 63) for c in range(components)]


def progressive_jpeg(
    blocks: Sequence[npt.NDArray[np.int64]],
    size: tuple[int, int],
    quant: npt.NDArray[np.int64],
    script: Sequence[Scan] | Iterator[Scan],
    *,
    before_frame: bytes = b"",
) -> bytes:
    """A progressive (SOF2) JPEG of `size` (height, width), three 1x1 components, from their
    quantized blocks (`quantized_blocks`), one quantization table, the scans of `script`;
    `before_frame`: marker segments written after the JFIF segment."""
    height, width = size
    jfif = segment(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0")
    dqt = segment(0xDB, b"\0" + bytes(int(q) for q in quant[_ZIGZAG]))
    components = b"".join(bytes([c + 1, 0x11, 0]) for c in range(3))
    sof = segment(
        _SOF2, b"\x08" + height.to_bytes(2, "big") + width.to_bytes(2, "big") + b"\x03" + components
    )
    tables: dict[int, bytes] = {}  # the last table of each class written
    made: dict[Scan, tuple[int, bytes, bytes]] = {}  # a scan repeated is made once
    body = []
    for scan in script:
        parts = made.get(scan)
        if parts is None:
            parts = made[scan] = _scan_parts(blocks, scan)
        table_class, table, data = parts
        if tables.get(table_class) != table:  # a DHT where the table changes
            tables[table_class] = table
            body.append(segment(0xC4, bytes([table_class << 4]) + table))
        body.append(data)
    return SOI + jfif + before_frame + dqt + sof + b"".join(body) + EOI
