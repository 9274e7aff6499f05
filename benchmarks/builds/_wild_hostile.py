"""The hostile inputs of the wild corpus: one maker per kind, and what a build should make of it.

Each kind says, per build configuration (`baseline`: `fastpack build --baseline`; `default`: the
default structure check), the outcome the image policy (compiler/images/policy.py) and the C
extensions should give once every input is guarded and bounded: a sample (stored as it was,
converted to an RGB JPEG, or converted and turned upright), a reject whose reason matches a
pattern, or either (byte flips land anywhere: in entropy-coded data a structure check cannot see
them). Files are made from a regular corpus image (`base`), a progressive OpenCV JPEG, or the
progressive writer of `_wild_jpeg` where no encoder writes such bytes.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image

from benchmarks.builds import _wild_jpeg as wj

CONFIGS = ("baseline", "default")
Outcome = Literal["sample", "reject", "either"]
Stored = Literal["", "as-is", "converted", "upright"]


@dataclass(frozen=True)
class Expected:
    """A sample (`stored`: the bytes as they were, a conversion, a conversion turned upright
    from EXIF orientation 6), a reject whose reason matches `reason`, or either."""

    outcome: Outcome
    reason: str = ""  # a regular expression, searched case-insensitively
    stored: Stored = ""

    def to_json(self) -> dict[str, str]:
        found: dict[str, str] = {"outcome": self.outcome}
        if self.reason:
            found["reason"] = self.reason
        if self.stored:
            found["stored"] = self.stored
        return found


Maker = Callable[["Sources", np.random.Generator], bytes | None]  # None: a directory


@dataclass(frozen=True)
class Kind:
    name: str
    suffix: str  # of the path the list names
    what: str  # one line for the page
    default: Expected
    baseline: Expected
    make: Maker

    def expected(self, config: str) -> Expected:
        return self.baseline if config == "baseline" else self.default


@dataclass
class Sources:
    """What hostile files are made from: a regular corpus image on demand, and cached pieces."""

    base: Callable[[np.random.Generator], bytes]
    cache: dict[str, bytes] = field(default_factory=dict)


_QUANT = np.full(64, 4, dtype=np.int64)
_ABORT_MARKERS = 4096 + 512  # more APPn/COM bytes than libjpeg's first memory-destination buffer
_HUGE_SIDE = 32768
_REPEATED_SCANS = 2500
_MANY_SCANS_SIDE = 512
_OUT_OF_RANGE = 1500  # an AC coefficient of 11 bits: the decoder takes it, the encoder does not


def _small_progressive(rng: np.random.Generator, side: int = 32, markers: bytes = b"") -> bytes:
    """A progressive JPEG from `_wild_jpeg.progressive_jpeg` with one AC coefficient of
    `_OUT_OF_RANGE` in a random luma block."""
    blocks = wj.quantized_blocks(wj.texture(side, side, rng), _QUANT)
    rows, cols = blocks[0].shape[:2]
    blocks[0][int(rng.integers(rows)), int(rng.integers(cols)), int(rng.integers(1, 10))] = (
        _OUT_OF_RANGE * int(rng.choice([-1, 1]))
    )
    return wj.progressive_jpeg(
        blocks, (side, side), _QUANT, wj.default_scans(), before_frame=markers
    )


def _abort_markers_coef(sources: Sources, rng: np.random.Generator) -> bytes:
    xmp = (
        b"http://ns.adobe.com/xap/1.0/\0"
        + b"<x:xmpmeta/>"
        + bytes(rng.integers(32, 127, 2600, dtype=np.uint8))
    )
    comment = bytes(rng.integers(32, 127, _ABORT_MARKERS - len(xmp), dtype=np.uint8))
    markers = wj.segment(0xE1, xmp) + wj.segment(0xFE, comment)
    return _small_progressive(rng, markers=markers)


def _coef_out_of_range(sources: Sources, rng: np.random.Generator) -> bytes:
    return _small_progressive(rng)


def _opencv_progressive(
    rng: np.random.Generator, side: int, sampling: int = cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420
) -> bytes:
    return wj.encode_jpeg(
        wj.texture(side, side, rng), quality=85, progressive=True, sampling=sampling
    )


def _huge_frame(sources: Sources, rng: np.random.Generator) -> bytes:
    return wj.with_frame_size(_opencv_progressive(rng, 32), _HUGE_SIDE, _HUGE_SIDE)


def _sampling_1x4(sources: Sources, rng: np.random.Generator) -> bytes:
    data = wj.encode_jpeg(
        wj.texture(32, 32, rng), quality=85, sampling=cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444
    )
    return wj.with_sampling(data, 0, 0x14)


def _drop_scan(data: bytes, rng: np.random.Generator, *, refinement: bool) -> bytes:
    """`data` without one of its scans: a last refinement (Ah > 0, Al = 0: no later scan
    builds on it, so the file is incomplete but consistent), or a first scan of a band that
    later scans refine (their Ah then disagrees with what came before)."""
    found = wj.scans(data)
    picks = []
    for start, end in found:
        _, _, _, ah, al = wj.scan_header(data, start)
        if (ah > 0 and al == 0) if refinement else (ah == 0 and al > 0):
            picks.append((start, end))
    start, end = picks[int(rng.integers(len(picks)))]
    return data[:start] + data[end:]


def _scan_dropped(sources: Sources, rng: np.random.Generator) -> bytes:
    return _drop_scan(_opencv_progressive(rng, 64), rng, refinement=True)


def _progression_broken(sources: Sources, rng: np.random.Generator) -> bytes:
    return _drop_scan(_opencv_progressive(rng, 64), rng, refinement=False)


def _eoi_between_scans(sources: Sources, rng: np.random.Generator) -> bytes:
    data = _opencv_progressive(rng, 64)
    found = wj.scans(data)
    start, _ = found[int(rng.integers(1, len(found)))]
    return data[:start] + wj.EOI


def _many_scans(sources: Sources, rng: np.random.Generator) -> bytes:
    cached = sources.cache.get("many-scans")
    if cached is None:
        side = _MANY_SCANS_SIDE
        flat = np.full((side, side, 3), rng.integers(0, 256, 3), dtype=np.uint8)
        blocks = wj.quantized_blocks(flat, _QUANT)  # one colour: every scan is a few bytes
        script = [*wj.default_scans(), *[wj.Scan((0,), 63, 63)] * _REPEATED_SCANS]
        cached = sources.cache["many-scans"] = wj.progressive_jpeg(
            blocks, (side, side), _QUANT, script
        )
    # distinct files: a comment of random bytes after the JFIF segment
    return wj.after_soi(cached, wj.segment(0xFE, rng.bytes(16).hex().encode()))


def _truncated(sources: Sources, rng: np.random.Generator) -> bytes:
    data = sources.base(rng)
    return data[: int(len(data) * rng.uniform(0.3, 0.9))]


def _byte_flipped(sources: Sources, rng: np.random.Generator) -> bytes:
    data = bytearray(sources.base(rng))
    for _ in range(int(rng.integers(1, 9))):
        data[int(rng.integers(2, len(data)))] ^= int(rng.integers(1, 256))
    return bytes(data)


def _pixels(rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    return wj.texture(int(rng.integers(32, 80)), int(rng.integers(32, 80)), rng)


def _cmyk(sources: Sources, rng: np.random.Generator) -> bytes:
    out = io.BytesIO()
    Image.fromarray(_pixels(rng)).convert("CMYK").save(out, "JPEG", quality=85)
    return out.getvalue()


def _png16(sources: Sources, rng: np.random.Generator) -> bytes:
    pixels = _pixels(rng).astype(np.uint16) * 257
    ok, buffer = cv2.imencode(".png", pixels)
    if not ok:
        raise RuntimeError("OpenCV could not encode a PNG")
    return bytes(buffer.tobytes())


def _exif_orientation(orientation: int) -> bytes:
    """An APP1 EXIF segment holding one tag: Orientation."""
    entry = struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0)
    tiff = b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", 1) + entry + struct.pack("<I", 0)
    return wj.segment(0xE1, b"Exif\0\0" + tiff)


def _exif_rotated(sources: Sources, rng: np.random.Generator) -> bytes:
    return wj.after_soi(sources.base(rng), _exif_orientation(6))


def _png_as_jpg(sources: Sources, rng: np.random.Generator) -> bytes:
    ok, buffer = cv2.imencode(".png", _pixels(rng))
    if not ok:
        raise RuntimeError("OpenCV could not encode a PNG")
    return bytes(buffer.tobytes())


def _html_as_jpg(sources: Sources, rng: np.random.Generator) -> bytes:
    return (
        b"<!DOCTYPE html><html><body><h1>404 Not Found</h1>"
        + rng.bytes(8).hex().encode()
        + b"</body></html>\n"
    )


def _zero_byte(sources: Sources, rng: np.random.Generator) -> bytes:
    return b""


def _directory(sources: Sources, rng: np.random.Generator) -> None:
    return None


_AS_IS = Expected("sample", stored="as-is")
_CONVERTED = Expected("sample", stored="converted")
_COEFFICIENT = Expected("reject", r"coefficient out of range")
_BUDGET = Expected("reject", r"pixel|budget")
_SAMPLING = Expected("reject", r"sampl|KeyError")
_TRUNCATED = Expected("reject", r"truncat|premature|end of")

KINDS: tuple[Kind, ...] = (
    Kind("abort-markers-coef", ".jpg",
         "progressive, 4.5 KB of APP1/COM segments, an 11-bit AC coefficient "
         "(aborted --baseline)",
         _AS_IS, _COEFFICIENT, _abort_markers_coef),
    Kind("coef-out-of-range", ".jpg",
         "progressive, an 11-bit AC coefficient: the decoder takes it, the encoder refuses it",
         _AS_IS, _COEFFICIENT, _coef_out_of_range),
    Kind("huge-frame", ".jpg",
         f"progressive 4:2:0, 1-2 KB, frame header claims {_HUGE_SIDE} x {_HUGE_SIDE}",
         _BUDGET, _BUDGET, _huge_frame),
    Kind("sampling-1x4", ".jpg",
         "4:4:4 baseline whose frame gives Y sampling 1x4 (simplejpeg's header raises KeyError)",
         _SAMPLING, _SAMPLING, _sampling_1x4),
    Kind("scan-dropped", ".jpg",
         "progressive, one last refinement scan removed: incomplete, consistent",
         _AS_IS, _AS_IS, _scan_dropped),
    Kind("progression-broken", ".jpg",
         "progressive, a first scan removed that a later scan refines",
         _AS_IS, Expected("reject", r"progression"), _progression_broken),
    Kind("eoi-between-scans", ".jpg", "progressive, EOI where a later scan starts",
         _AS_IS, _AS_IS, _eoi_between_scans),
    Kind("many-scans", ".jpg",
         f"progressive {_MANY_SCANS_SIDE} x {_MANY_SCANS_SIDE}, "
         f"{_REPEATED_SCANS:,} repeats of one scan",
         _AS_IS, Expected("reject", r"scan"), _many_scans),
    Kind("truncated", ".jpg", "a corpus JPEG cut at 30-90% of its length",
         _TRUNCATED, _TRUNCATED, _truncated),
    Kind("byte-flipped", ".jpg", "a corpus JPEG with 1-8 bytes XORed at random offsets",
         Expected("either"), Expected("either"), _byte_flipped),
    Kind("cmyk", ".jpg", "CMYK JPEG (Pillow, Adobe marker)", _CONVERTED, _CONVERTED, _cmyk),
    Kind("png16", ".png", "16-bit RGB PNG", _CONVERTED, _CONVERTED, _png16),
    Kind("exif-rotated", ".jpg", "a corpus JPEG with EXIF orientation 6",
         Expected("sample", stored="upright"), Expected("sample", stored="upright"), _exif_rotated),
    Kind("png-as-jpg", ".jpg", "PNG bytes in a .jpg file", _CONVERTED, _CONVERTED, _png_as_jpg),
    Kind("html-as-jpg", ".jpg", "an HTML error page saved as .jpg",
         Expected("reject", r"not a decodable image"), Expected("reject", r"not a decodable image"),
         _html_as_jpg),
    Kind("zero-byte", ".jpg", "an empty file", Expected("reject", r"empty"),
         Expected("reject", r"empty"), _zero_byte),
    Kind("directory", ".jpg", "a directory where the list names a file",
         Expected("reject", r"not a regular file|directory"),
         Expected("reject", r"not a regular file|directory"), _directory),
)  # fmt: skip
KIND_NAMES = tuple(k.name for k in KINDS)
BY_NAME = {k.name: k for k in KINDS}
