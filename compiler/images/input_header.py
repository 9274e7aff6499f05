"""The size that a non-JPEG input's header declares, read before OpenCV decodes it, so that the
pixel budget is checked first (a JPEG's comes from `fastpack.formats.image_header`).

Read here: PNG (IHDR), GIF (logical screen), BMP (its info header), WebP (VP8, VP8L and VP8X),
TIFF (the first IFD: OpenCV decodes the first page), PNM and PFM (P1-P6, PF, Pf) and Sun raster.
`components` is what OpenCV decodes the image to at most (4 where it may add alpha), so that the
check errs on the side of memory. Bytes that start like one of these but whose header gives no
size raise `UnreadableHeaderError`; any other format is `None`: OpenCV decodes it within its own
limit (`OPENCV_IO_MAX_IMAGE_PIXELS`, 2**30 pixels by default) and its codec's (libavif's for
AVIF).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable

from fastpack.formats.image_header import PNG_SIGNATURE, ImageHeader, png_header

_TIFF_TAGS = {256: "width", 257: "height", 262: "photometric", 277: "samples"}
_TIFF_SHORT, _TIFF_LONG = 3, 4
_TIFF_PALETTE = 3  # PhotometricInterpretation: OpenCV decodes a palette image to BGR
_TIFF_HEADER_BYTES = 8
_PNM = re.compile(rb"P([1-6Ff])\s+(?:#[^\n]*\n\s*)*(\d+)\s+(?:#[^\n]*\n\s*)*(\d+)")
_PNM_CHANNELS = {b"1": 1, b"2": 1, b"3": 3, b"4": 1, b"5": 1, b"6": 3, b"F": 3, b"f": 1}
_SUN_RASTER = b"\x59\xa6\x6a\x95"
_SUN_RASTER_BYTES = 16  # magic, width, height, depth: big-endian u32 each
_BMP_CORE_HEADER = 12  # OS/2 BITMAPCOREHEADER: 16-bit sizes
_BMP_HEADER_BYTES = 30  # file header (14) + the info header up to its bit count
_BMP_ALPHA_BITS = 32
_GIF_HEADER_BYTES = 10
_WEBP_HEADER_BYTES = 30
_WEBP_VP8_START = b"\x9d\x01\x2a"
_WEBP_VP8L_SIGNATURE = 0x2F
_FOURTEEN_BITS = 0x3FFF


class UnreadableHeaderError(ValueError):
    """Bytes that start like an image format read here, but whose header gives no size."""


def _gif(data: bytes) -> ImageHeader:
    if len(data) < _GIF_HEADER_BYTES:
        raise UnreadableHeaderError("GIF cut off before its logical screen size")
    width, height = struct.unpack_from("<HH", data, 6)
    return ImageHeader(height, width, 4)


def _bmp(data: bytes) -> ImageHeader:
    if len(data) < _BMP_HEADER_BYTES:
        raise UnreadableHeaderError("BMP cut off before its info header")
    (size,) = struct.unpack_from("<I", data, 14)
    if size == _BMP_CORE_HEADER:
        width, height, _, bits = struct.unpack_from("<HHHH", data, 18)
    else:
        width, height, _, bits = struct.unpack_from("<iiHH", data, 18)
    return ImageHeader(abs(height), abs(width), 4 if bits == _BMP_ALPHA_BITS else 3)


def _webp(data: bytes) -> ImageHeader:
    if len(data) < _WEBP_HEADER_BYTES:
        raise UnreadableHeaderError("WebP cut off before its image header")
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == _WEBP_VP8_START:
        width, height = struct.unpack_from("<HH", data, 26)
        return ImageHeader(height & _FOURTEEN_BITS, width & _FOURTEEN_BITS, 4)
    if chunk == b"VP8L" and data[20] == _WEBP_VP8L_SIGNATURE:
        (bits,) = struct.unpack_from("<I", data, 21)
        return ImageHeader(((bits >> 14) & _FOURTEEN_BITS) + 1, (bits & _FOURTEEN_BITS) + 1, 4)
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return ImageHeader(height, width, 4)
    raise UnreadableHeaderError(f"WebP whose first chunk {chunk!r} gives no size")


def _tiff(data: bytes) -> ImageHeader:
    order = "<" if data[:2] == b"II" else ">"
    if len(data) < _TIFF_HEADER_BYTES:
        raise UnreadableHeaderError("TIFF cut off before its first IFD")
    (ifd,) = struct.unpack_from(order + "I", data, 4)
    if ifd + 2 > len(data):
        raise UnreadableHeaderError(f"TIFF whose first IFD (offset {ifd}) is past its end")
    (count,) = struct.unpack_from(order + "H", data, ifd)
    found = {"samples": 1, "photometric": 0}
    for entry in range(ifd + 2, min(ifd + 2 + 12 * count, len(data) - 11), 12):
        tag, kind = struct.unpack_from(order + "HH", data, entry)
        if tag in _TIFF_TAGS and kind in (_TIFF_SHORT, _TIFF_LONG):
            code = order + ("H" if kind == _TIFF_SHORT else "I")
            (found[_TIFF_TAGS[tag]],) = struct.unpack_from(code, data, entry + 8)
    if "width" not in found or "height" not in found:
        raise UnreadableHeaderError("TIFF whose first IFD gives no ImageWidth and ImageLength")
    samples = found["samples"]
    components = 3 if samples == 1 and found["photometric"] == _TIFF_PALETTE else samples
    return ImageHeader(found["height"], found["width"], components)


def _pnm(data: bytes) -> ImageHeader:
    match = _PNM.match(data, 0, 4096)
    if match is None:
        raise UnreadableHeaderError("PNM whose header gives no width and height")
    kind, width, height = match.groups()
    return ImageHeader(int(height), int(width), _PNM_CHANNELS[kind])


def _sun_raster(data: bytes) -> ImageHeader:
    if len(data) < _SUN_RASTER_BYTES:
        raise UnreadableHeaderError("Sun raster cut off before its header")
    width, height, depth = struct.unpack_from(">III", data, 4)
    return ImageHeader(height, width, 4 if depth == _BMP_ALPHA_BITS else 3)


def _is_pnm(data: bytes) -> bool:
    return data[:1] == b"P" and data[1:2] in _PNM_CHANNELS


_READERS: tuple[tuple[Callable[[bytes], bool], Callable[[bytes], ImageHeader]], ...] = (
    (lambda d: d.startswith(PNG_SIGNATURE), png_header),
    (lambda d: d[:6] in (b"GIF87a", b"GIF89a"), _gif),
    (lambda d: d.startswith(b"BM"), _bmp),
    (lambda d: d.startswith(b"RIFF") and d[8:12] == b"WEBP", _webp),
    (lambda d: d[:4] in (b"II*\x00", b"MM\x00*"), _tiff),
    (_is_pnm, _pnm),
    (lambda d: d.startswith(_SUN_RASTER), _sun_raster),
)


def input_header(data: bytes) -> ImageHeader | None:
    """What the header of a non-JPEG input declares (module docstring); None for a format not
    read here; UnreadableHeaderError (or the formats' ImageHeaderError for a PNG) for one whose
    header gives no size."""
    for starts, read in _READERS:
        if starts(data):
            return read(data)
    return None
