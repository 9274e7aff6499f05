"""The reader's one door for image bytes: a header checked against the pixel budget before any
decoder allocates, and every decoder call (simplejpeg, OpenCV, the window decoder) behind one
wrapper that turns whatever it raises into a `FieldValueError`. The caller that knows the sample
names it (`named_decode_error`).

- `PixelBudgetError`: the header declares more samples than the budget (`DecodeOptions`,
  `Dataset(pixel_budget=)`); nothing was decoded.
- `ImageHeaderError`: no header that says the image's size.
- `ImageDecodeError`: a decoder failed on the bytes; the message keeps its words, and the type
  of what it raised where that was not a ValueError (simplejpeg raises KeyError for some frame
  headers).

Only a MemoryError passes as it is: that is the machine's, not the bytes'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from fastpack.formats import FastpackError, FieldValueError, PixelBudgetError, ShardFormatError
from fastpack.formats.image_header import ImageHeader, check_pixel_budget, jpeg_header, png_header

Data = bytes | bytearray | memoryview
P = ParamSpec("P")
T = TypeVar("T")


class ImageDecodeError(FieldValueError):
    """A decoder failed on an image's bytes; the message says what it raised."""


def describe(error: BaseException) -> str:
    """A decoder's error in words: its message, after its type unless it is a ValueError."""
    if isinstance(error, ValueError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def guarded(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)`; anything it raises but a MemoryError or a FieldValueError
    (already in words) becomes an ImageDecodeError."""
    try:
        return call(*args, **kwargs)
    except (MemoryError, FieldValueError):
        raise
    except Exception as e:
        raise ImageDecodeError(describe(e)) from e


def budgeted_jpeg(data: Data, budget: int) -> ImageHeader:
    """The JPEG's header, checked against `budget` (PixelBudgetError, ImageHeaderError)."""
    header = jpeg_header(data)
    check_pixel_budget(header, budget)
    return header


def budgeted_png(data: Data, budget: int) -> ImageHeader:
    """The PNG's header, checked against `budget` (PixelBudgetError, ImageHeaderError)."""
    header = png_header(data)
    check_pixel_budget(header, budget)
    return header


def named_decode_error(name: str, error: Exception) -> FastpackError:
    """The error of member `name` (the sample, its key and field) whose decode raised `error`:
    a PixelBudgetError stays one, naming the member; anything else is a ShardFormatError that
    says the member does not decode."""
    if isinstance(error, PixelBudgetError):
        return PixelBudgetError(f"{name}: {error}")
    return ShardFormatError(f"{name} does not decode: {error}")


def needs_name(error: ValueError) -> bool:
    """Whether a decode's ValueError is to be raised again naming the sample: a FieldValueError
    (the decoders' and the headers', which do not know the sample) or a ValueError from outside
    fastpack; any other FastpackError names what it is about already."""
    return isinstance(error, FieldValueError) or not isinstance(error, FastpackError)


@contextmanager
def naming(error: Callable[[ValueError], Exception]) -> Iterator[None]:
    """A ValueError that `needs_name` raised as `error(e)`; anything else as it is."""
    try:
        yield
    except ValueError as e:
        if not needs_name(e):
            raise
        raise error(e) from e
