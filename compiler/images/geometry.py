"""Fields that follow the image (formats/SPEC.md section 2.1 `geometry`): a mask PNG's size, and
masks and boxes shrunk by the factors the image was shrunk by (`--max-side`).

A mask is shrunk nearest-neighbour and written back as a PNG of the same color type and bit
depth (palette indices, gray levels and channels kept, the palette and tRNS chunks copied; other
ancillary chunks dropped): OpenCV decodes it, this module maps the pixels back to the PNG's
samples and writes the PNG itself (filter 0, zlib), deterministically.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
from fastpack.formats.image_header import PNG_SIGNATURE

_IHDR = struct.Struct(">4s4sIIBBBBB")  # length, type, width, height, depth, color, ...
_GRAY, _RGB, _PALETTE, _GRAY_ALPHA, _RGBA = 0, 2, 3, 4, 6
_CHANNELS = {_GRAY: 1, _RGB: 3, _PALETTE: 1, _GRAY_ALPHA: 2, _RGBA: 4}
_KEPT_CHUNKS = (b"PLTE", b"tRNS")
_ZLIB_LEVEL = 6
_GRAY_NDIM = 2  # OpenCV decodes one channel to a 2-D array
_BYTE_DEPTH, _WIDE_DEPTH = 8, 16  # bits per sample

Samples = npt.NDArray[Any]


class MaskError(ValueError):
    """A mask PNG that cannot be measured or shrunk; the message is the reject's reason."""


def png_size(data: bytes) -> tuple[int, int]:
    """`(height, width)` from a PNG's IHDR chunk."""
    return _header(data)[:2]


def _header(data: bytes) -> tuple[int, int, int, int]:
    """`(height, width, bit depth, color type)` of a PNG."""
    if len(data) < 8 + _IHDR.size or not data.startswith(PNG_SIGNATURE):
        raise MaskError(f"not a PNG (it starts with {data[:8]!r})")
    _, kind, width, height, depth, color, *_ = _IHDR.unpack_from(data, 8)
    if kind != b"IHDR" or color not in _CHANNELS:
        raise MaskError("PNG without a valid IHDR chunk")
    return height, width, depth, color


def _chunks(data: bytes) -> dict[bytes, bytes]:
    """The PLTE and tRNS chunks of a PNG, by type."""
    found: dict[bytes, bytes] = {}
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, at)
        if kind in _KEPT_CHUNKS:
            found[kind] = data[at + 8 : at + 8 + length]
        if kind == b"IEND":
            break
        at += 12 + length
    return found


def _nearest(samples: Samples, height: int, width: int) -> Samples:
    """Nearest-neighbour resize by pixel centres, in integers (deterministic)."""
    h, w = samples.shape[:2]
    rows = (2 * np.arange(height) + 1) * h // (2 * height)
    cols = (2 * np.arange(width) + 1) * w // (2 * width)
    return np.ascontiguousarray(samples[rows][:, cols])


def _palette_indices(pixels: Samples, chunks: dict[bytes, bytes]) -> Samples:
    """The palette index of each decoded BGR(A) pixel (the first entry of a repeated color)."""
    plte = np.frombuffer(chunks.get(b"PLTE", b""), np.uint8).reshape(-1, 3).astype(np.uint32)
    alpha = np.full(len(plte), 255, np.uint32)
    trns = np.frombuffer(chunks.get(b"tRNS", b""), np.uint8)[: len(plte)]
    alpha[: len(trns)] = trns
    keys = plte[:, 0] << 24 | plte[:, 1] << 16 | plte[:, 2] << 8 | alpha
    p = pixels.astype(np.uint32)
    a = p[..., 3] if p.shape[-1] == _CHANNELS[_RGBA] else np.uint32(255)
    found = p[..., 2] << 24 | p[..., 1] << 16 | p[..., 0] << 8 | a
    unique, first = np.unique(keys, return_index=True)
    at = np.minimum(np.searchsorted(unique, found), max(len(unique) - 1, 0))
    if not len(unique) or not np.array_equal(unique[at], found):
        raise MaskError("palette PNG whose decoded colors are not all in its palette")
    indices: Samples = first[at].astype(np.uint8)
    return indices


def _samples(pixels: Samples, depth: int, color: int, chunks: dict[bytes, bytes]) -> Samples:
    """The PNG's own samples (gray, gray+alpha, RGB, RGBA or palette index) from OpenCV's decode."""
    channels = 1 if pixels.ndim == _GRAY_NDIM else pixels.shape[2]
    if color == _PALETTE:
        if channels not in (3, 4):
            raise MaskError(f"palette PNG decoded to {channels} channels")
        return _palette_indices(pixels, chunks)
    wanted = {_GRAY: 1, _GRAY_ALPHA: 4, _RGB: 3, _RGBA: 4}[color]
    if channels != wanted:
        raise MaskError(f"PNG of color type {color} decoded to {channels} channels")
    if color == _GRAY:
        return (
            pixels if depth >= _BYTE_DEPTH else pixels // (255 // (2**depth - 1))
        )  # undo the expansion
    if color == _GRAY_ALPHA:
        return np.dstack([pixels[..., 0], pixels[..., 3]])
    return np.ascontiguousarray(pixels[..., [2, 1, 0, 3][:channels]])  # BGR(A) -> RGB(A)


def _row_bytes(samples: Samples, depth: int) -> npt.NDArray[np.uint8]:
    """Each row's bytes as the PNG stores them (big-endian, sub-byte samples packed)."""
    height = samples.shape[0]
    if depth == _WIDE_DEPTH:
        return samples.astype(">u2").view(np.uint8).reshape(height, -1)
    flat = samples.astype(np.uint8).reshape(height, -1)
    if depth == _BYTE_DEPTH:
        return flat
    per_byte = 8 // depth
    padded = np.zeros((height, -(-flat.shape[1] // per_byte) * per_byte), np.uint8)
    padded[:, : flat.shape[1]] = flat
    shifts = (8 - depth * (np.arange(per_byte) + 1)).astype(np.uint8)
    grouped = padded.reshape(height, -1, per_byte) << shifts
    packed: npt.NDArray[np.uint8] = np.bitwise_or.reduce(grouped, axis=2).astype(np.uint8)
    return packed


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _write_png(samples: Samples, depth: int, color: int, chunks: dict[bytes, bytes]) -> bytes:
    height, width = samples.shape[:2]
    rows = _row_bytes(samples, depth)
    raw = np.hstack([np.zeros((height, 1), np.uint8), rows]).tobytes()  # filter 0 per row
    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    parts = [PNG_SIGNATURE, _chunk(b"IHDR", header)]
    parts += [_chunk(kind, chunks[kind]) for kind in _KEPT_CHUNKS if kind in chunks]
    parts += [_chunk(b"IDAT", zlib.compress(raw, _ZLIB_LEVEL)), _chunk(b"IEND", b"")]
    return b"".join(parts)


def shrink_mask(data: bytes, size: tuple[int, int]) -> bytes:
    """The mask PNG `data` resized nearest-neighbour to `size` `(height, width)`."""
    _, _, depth, color = _header(data)
    pixels = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if pixels is None or pixels.size == 0:
        raise MaskError("mask PNG does not decode")
    chunks = _chunks(data)
    samples = _nearest(_samples(pixels, depth, color, chunks), *size)
    return _write_png(samples, depth, color, chunks)


def scale_boxes(boxes: Samples, scale: tuple[float, float]) -> Samples:
    """Boxes `x0, y0, x1, y1` scaled by `(sy, sx)`, in their dtype (integers rounded)."""
    sy, sx = scale
    scaled = boxes.astype(np.float64) * np.array([sx, sy, sx, sy])
    if boxes.dtype.kind in "iub":
        scaled = np.rint(scaled)
    result: Samples = scaled.astype(boxes.dtype)
    return result
