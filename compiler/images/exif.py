"""EXIF orientation: reading the tag (from a JPEG's APP1 segment or a TIFF/EXIF blob) and applying
it to pixels. Malformed metadata reads as orientation 1: it never rejects an image."""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

NO_ROTATION = 1
TRANSPOSING = (5, 6, 7, 8)  # orientations that swap height and width
_ORIENTATION_TAG = 0x0112
_SHORT = 3
_EXIF_HEADER = b"Exif\x00\x00"
_APP1, _SOS, _EOI = 0xE1, 0xDA, 0xD9
_STANDALONE = {0x01, 0xD8, *range(0xD0, 0xD8)}  # markers without a length field
_MARKER_PREFIX = 0xFF  # every JPEG marker starts with it; repeated, it is fill
_TIFF_HEADER_BYTES = 8  # byte order (2), magic (2), offset of IFD0 (4)
_TIFF_MAGIC = 42
_MAX_ORIENTATION = 8  # EXIF orientations are 1-8

Pixels = npt.NDArray[np.uint8]


def tiff_orientation(tiff: bytes | memoryview) -> int:
    """The Orientation tag (1-8) of IFD0 in a TIFF-structured EXIF blob; 1 when absent or bad."""
    if len(tiff) < _TIFF_HEADER_BYTES or bytes(tiff[:2]) not in (b"II", b"MM"):
        return NO_ROTATION
    order = "<" if bytes(tiff[:2]) == b"II" else ">"
    magic, ifd = struct.unpack_from(order + "HI", tiff, 2)
    if magic != _TIFF_MAGIC or ifd + 2 > len(tiff):
        return NO_ROTATION
    (count,) = struct.unpack_from(order + "H", tiff, ifd)
    for entry in range(ifd + 2, min(ifd + 2 + 12 * count, len(tiff) - 11), 12):
        tag, kind, n, value = struct.unpack_from(order + "HHIH", tiff, entry)
        if tag == _ORIENTATION_TAG:
            return (
                value
                if kind == _SHORT and n == 1 and 1 <= value <= _MAX_ORIENTATION
                else NO_ROTATION
            )
    return NO_ROTATION


def jpeg_orientation(data: bytes) -> int:
    """The EXIF orientation of a JPEG, found by walking its marker segments up to the scan."""
    view, pos = memoryview(data), 2
    while pos + 4 <= len(view) and view[pos] == _MARKER_PREFIX:
        marker = view[pos + 1]
        if marker == _MARKER_PREFIX:  # fill byte
            pos += 1
            continue
        if marker in _STANDALONE:
            pos += 2
            continue
        if marker in (_SOS, _EOI):
            break
        length = (view[pos + 2] << 8) | view[pos + 3]
        payload = view[pos + 4 : pos + 2 + length]
        if marker == _APP1 and payload[:6] == _EXIF_HEADER:
            return tiff_orientation(payload[6:])
        pos += 2 + length
    return NO_ROTATION


def apply_orientation(pixels: Pixels, orientation: int) -> Pixels:
    """Turn an image stored with EXIF `orientation` upright (orientation 1)."""
    transposed = orientation in TRANSPOSING
    if transposed:
        pixels = pixels.swapaxes(0, 1)
    flip_rows = orientation in (3, 4, 7, 8)
    flip_cols = orientation in (2, 3, 6, 7)
    return pixels[:: -1 if flip_rows else 1, :: -1 if flip_cols else 1]
