"""What an image's header declares, read from its bytes alone, and the pixel budget that every
decode is checked against before a decoder allocates.

- JPEG: the frame header (SOF), found by walking the marker segments from SOI as libjpeg does:
  fill bytes (`FF FF`) skipped, standalone markers (TEM, RSTn) stepped over, and bytes that are not
  a marker where one is expected skipped up to the next `FF` (libjpeg warns of "extraneous bytes"
  there and reads on). The first SOF gives the size, the component count and whether the frame
  is progressive (SOF2, SOF6, SOF10, SOF14).
- PNG: the IHDR chunk, which must come first. Its components are the channels OpenCV decodes it to
  (gray 1, RGB 3; gray + alpha, RGBA and palette 4, the most a palette with transparency gives).

The pixel budget counts samples: width x height x components, as the header declares them. The
decoders' memory follows it: libjpeg keeps 2 bytes per sample for the coefficient buffer of a
whole progressive image, and an RGB output takes 3 bytes per pixel. `DEFAULT_PIXEL_BUDGET`, 2**28
samples, admits 16384 x 16384 gray or about 89 megapixels of color (9459 x 9459 x 3). At it, a
progressive 4:4:4 image peaks at 632-636 MiB in a crop and 887 MiB in a full decode, and a build
worker converting the largest gray image at 1,420 MiB (benchmarks/readers/PIXEL_BUDGET.md).

Nothing here imports a decoder: the checks run before one is called.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .errors import FieldValueError

DEFAULT_PIXEL_BUDGET = 1 << 28  # samples: width x height x components
JPEG_SIGNATURE = b"\xff\xd8"  # SOI, the first marker of every JPEG
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Photos have tens of segments (a progressive one with its tables, an ICC profile in 64 KiB
# pieces); a crafted file of millions of tiny ones must not take seconds to walk. The header
# reader here and the compiler's structure check (compiler/images/jpeg_structure.py) stop at it.
MAX_SEGMENTS = 10_000

_MARKER = 0xFF
_TEM, _SOI, _EOI, _SOS = 0x01, 0xD8, 0xD9, 0xDA
_STANDALONE = frozenset({_TEM, *range(0xD0, 0xD8)})  # no length follows these
_FRAMES = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_PROGRESSIVE = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
_SOF_BYTES = 10  # marker (2), length (2), precision (1), height (2), width (2), components (1)
_IHDR = struct.Struct(">I4sIIBB")  # length, type, width, height, bit depth, color type
_PNG_CHANNELS = {0: 1, 2: 3, 3: 4, 4: 4, 6: 4}  # by color type, as OpenCV decodes it


class ImageHeaderError(FieldValueError):
    """Bytes whose header does not say an image's size: not a JPEG or PNG, or one cut off or
    damaged before its frame header (IHDR)."""


class PixelBudgetError(FieldValueError):
    """An image whose header declares more samples (width x height x components) than the pixel
    budget allows; refused before any decoder allocates. The message gives the numbers."""


class ImageHeader(NamedTuple):
    """What a header declares. `progressive`: a JPEG whose decode keeps every coefficient of
    the whole image (2 bytes per sample) until its last scan. (A NamedTuple: one is read per
    sample a reader decodes, and a tuple is made in a fraction of a frozen dataclass's time.)"""

    height: int
    width: int
    components: int
    progressive: bool = False

    @property
    def samples(self) -> int:
        return self.height * self.width * self.components

    @property
    def size(self) -> tuple[int, int]:
        """`(height, width)`."""
        return self.height, self.width


Data = bytes | bytearray | memoryview


def _segment_length(view: memoryview, at: int, code: int) -> int:
    if at + 4 > len(view):
        raise ImageHeaderError(
            f"JPEG cut off: the FF{code:02X} segment at offset {at} has no length (the data ends "
            f"at byte {len(view)})"
        )
    return (view[at + 2] << 8) | view[at + 3]


def _frame(view: memoryview, at: int, code: int) -> ImageHeader:
    if at + _SOF_BYTES > len(view):
        raise ImageHeaderError(
            f"JPEG cut off in its frame header (FF{code:02X} at offset {at}; the data ends at "
            f"byte {len(view)})"
        )
    return _nonempty(
        ImageHeader(
            (view[at + 5] << 8) | view[at + 6],
            (view[at + 7] << 8) | view[at + 8],
            view[at + 9],
            code in _PROGRESSIVE,
        ),
        f"JPEG frame header (FF{code:02X} at offset {at})",
    )


def _nonempty(header: ImageHeader, where: str) -> ImageHeader:
    """`header`, or ImageHeaderError where it declares no pixels (a height of 0 in a JPEG
    promises a DNL marker, which libjpeg does not support) or no components."""
    if header.height == 0 or header.width == 0 or header.components == 0:
        raise ImageHeaderError(
            f"{where} declares an empty image: {header.width} x {header.height} pixels x "
            f"{header.components} components"
        )
    return header


def jpeg_header(data: Data) -> ImageHeader:
    """The frame header of a JPEG (module docstring); ImageHeaderError where there is none
    before the first scan, the end of the data, or MAX_SEGMENTS segments."""
    view = memoryview(data).cast("B")
    if bytes(view[:2]) != JPEG_SIGNATURE:
        raise ImageHeaderError(f"not a JPEG: it starts with {bytes(view[:4])!r}, not FF D8")
    pos, end = 2, len(view)
    for _ in range(MAX_SEGMENTS):
        while pos < end and view[pos] != _MARKER:  # extraneous bytes, as libjpeg skips them
            pos += 1
        while pos + 1 < end and view[pos + 1] == _MARKER:  # fill bytes
            pos += 1
        if pos + 1 >= end:
            raise ImageHeaderError(
                f"JPEG without a frame header (SOF): the data ends at byte {end} first"
            )
        code = view[pos + 1]
        if code in _STANDALONE:
            pos += 2
            continue
        if code in (_SOI, _EOI, _SOS):
            raise ImageHeaderError(
                f"JPEG without a frame header (SOF) before the FF{code:02X} marker at offset {pos}"
            )
        if code in _FRAMES:
            return _frame(view, pos, code)
        pos += 2 + _segment_length(view, pos, code)
    raise ImageHeaderError(f"JPEG with more than {MAX_SEGMENTS:,} segments before its frame header")


def png_header(data: Data) -> ImageHeader:
    """The IHDR chunk of a PNG (module docstring); ImageHeaderError where it is not first."""
    head = bytes(memoryview(data)[: len(PNG_SIGNATURE) + _IHDR.size])
    if not head.startswith(PNG_SIGNATURE) or len(head) < len(PNG_SIGNATURE) + _IHDR.size:
        raise ImageHeaderError(
            f"not a PNG with its IHDR chunk first ({len(data)} bytes, starting {head[:16]!r})"
        )
    _, kind, width, height, _, color = _IHDR.unpack_from(head, len(PNG_SIGNATURE))
    if kind != b"IHDR" or color not in _PNG_CHANNELS:
        raise ImageHeaderError(f"not a PNG with a valid IHDR chunk first (found {kind!r})")
    header = ImageHeader(height=height, width=width, components=_PNG_CHANNELS[color])
    return _nonempty(header, "PNG IHDR chunk")


def image_header(data: Data) -> ImageHeader:
    """The header of a JPEG or a PNG, by its signature; ImageHeaderError for anything else."""
    if bytes(memoryview(data)[:2]) == JPEG_SIGNATURE:
        return jpeg_header(data)
    return png_header(data)


def check_pixel_budget(header: ImageHeader, budget: int, option: str = "pixel_budget") -> None:
    """PixelBudgetError, with the numbers and `option` (where the budget is set), when `header`
    declares more samples than `budget`."""
    if header.samples > budget:
        raise PixelBudgetError(
            f"{header.width} x {header.height} pixels x {header.components} components = "
            f"{header.samples:,} samples, over the pixel budget of {budget:,} ({option})"
        )


def check_budget_value(budget: object, where: str) -> int:
    """`budget` as a pixel budget (an int >= 1); ValueError naming `where` otherwise."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"{where} must be an int >= 1 (samples), got {budget!r}")
    return budget
