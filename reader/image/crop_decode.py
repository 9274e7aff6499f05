"""Decode only the pixels a crop needs, then resize them into the output.

Where fastpack's C extension (`_jpeg_crop`, built against the system's libjpeg-turbo when its
headers and a compiler are present) is installed, a crop decodes only its window: rows above it
are entropy-decoded and dropped, columns beside it skip the inverse DCT and colour conversion,
and nothing below it is read. Otherwise simplejpeg decodes the whole image at the same DCT scale
and the window is cut from it. Both give the same pixels (tests/reader/image/
test_crop_decode.py), so the choice changes speed only.

`FASTPACK_JPEG_DECODER=simplejpeg` in the environment turns the window decode off; `decoder()`
says which one runs.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType

import simplejpeg

from .decode import (
    DEFAULT_OPTIONS,
    DecodeOptions,
    Image,
    JpegData,
    decode_scaled,
    resize_region,
    scratch,
)

ENVIRONMENT_VARIABLE = "FASTPACK_JPEG_DECODER"
Window = tuple[int, int, int, int]  # top, left, bottom, right in pixels of the scaled image


def _load_extension() -> ModuleType | None:
    try:
        return importlib.import_module(f"{__package__}._jpeg_crop")
    except ImportError:  # not built (no compiler or headers), or libjpeg missing at run time
        return None


_EXTENSION = _load_extension()


@dataclass(frozen=True, slots=True)
class Decoder:
    """Which JPEG decoder crops run through."""

    name: str  # "libjpeg-turbo window" or "simplejpeg"
    version: str
    detail: str

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.detail})"


def _enabled_by_environment() -> bool:
    choice = os.environ.get(ENVIRONMENT_VARIABLE, "auto").strip().lower()
    if choice not in ("auto", "simplejpeg"):
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be 'auto' or 'simplejpeg', got {choice!r}")
    return _EXTENSION is not None and choice == "auto"


class _Setting:
    enabled = _enabled_by_environment()


def window_decode_enabled() -> bool:
    """Whether crops decode their window only: the extension is built and neither the
    environment nor `use_window_decode` asked for simplejpeg."""
    return _Setting.enabled


def use_window_decode(enabled: bool) -> bool:
    """Turn the window decode on (where built) or off in this process; returns the previous
    setting. DataLoader workers started later inherit it when forked; spawned workers read
    the environment variable instead."""
    previous = _Setting.enabled
    _Setting.enabled = enabled and _EXTENSION is not None
    return previous


def decoder() -> Decoder:
    """The decoder this process's crops use."""
    if _Setting.enabled:
        assert _EXTENSION is not None
        number = int(_EXTENSION.LIBJPEG_TURBO_VERSION)
        version = f"{number // 1000000}.{number // 1000 % 1000}.{number % 1000}"
        return Decoder("libjpeg-turbo window", version, "decodes only the crop's window")
    reason = "window decode turned off" if _EXTENSION else "window decoder not built"
    return Decoder("simplejpeg", simplejpeg.__version__, f"whole image, then cut; {reason}")


def decode_window(
    data: JpegData, size: tuple[int, int], shift: int, window: Window, options: DecodeOptions
) -> Image:
    """Pixels `window` of the JPEG `data` (full size `size`) decoded at `1 / 2**shift`, as a
    view valid until this thread's next decode; clipped to the scaled image as a slice is.
    Where the window decoder refuses the bytes (its own memory and scan limits included),
    simplejpeg decodes the whole image at that scale, its header checked against
    `options.pixel_budget` first; its errors are `FieldValueError`s (`guard`)."""
    top, left, bottom, right = window
    if _Setting.enabled and _EXTENSION is not None:
        scaled_width = -(-size[1] >> shift)
        buffer = scratch((bottom - top + 2) * scaled_width * 3)
        try:
            y0, x0, rows, columns, _, _, _ = _EXTENSION.decode_window(
                data,
                shift,
                top,
                left,
                bottom - top,
                right - left,
                buffer,
                fastdct=options.fastdct,
                fastupsample=options.fastupsample,
            )
        except Exception:  # any refusal: the fallback decodes or names the error
            pass  # simplejpeg decodes it below (within the pixel budget) or raises its error
        else:
            block = buffer[: rows * columns * 3].reshape(rows, columns, 3)
            region: Image = block[top - y0 : bottom - y0, left - x0 : right - x0]
            return region
    image = decode_scaled(data, size[0], size[1], shift, options)
    return image[top:bottom, left:right]


def render(  # noqa: PLR0913 -- keyword inputs
    data: JpegData,
    size: tuple[int, int],
    shift: int,
    window: Window,
    out: Image,
    *,
    flip: bool = False,
    options: DecodeOptions = DEFAULT_OPTIONS,
) -> None:
    """Decode `window` of the JPEG `data` (full size `size`) at `1 / 2**shift` (`decode_window`;
    the window of a box: `decode.scaled_window`), and write it, resized to `out`'s shape and
    optionally mirrored, into `out`."""
    resize_region(decode_window(data, size, shift, window, options), out, flip=flip)
