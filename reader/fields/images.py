"""The reader's side of the image field types (formats/field_types/ marks them `image`): how
each is decoded to pixels and checked by verify, keyed by the same type name. It lives here, not
in formats/, because it needs the image libraries (simplejpeg, OpenCV) that formats/ does not
import. A new image type adds its entry to `IMAGE_READERS`; the other field types need nothing
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy.typing as npt
import simplejpeg
from fastpack.formats import field_type
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET

from ..image.decode import DecodeOptions, decode, decode_png, decode_png_bgr
from ..image.guard import budgeted_jpeg, guarded

AnyArray = npt.NDArray[Any]
Payload = bytes | memoryview


class Decode(Protocol):
    def __call__(self, data: Payload, pixel_budget: int = ..., /) -> AnyArray: ...


class Check(Protocol):
    def __call__(self, data: Payload, pixel_budget: int = ..., /) -> tuple[int, int]: ...


@dataclass(frozen=True, kw_only=True)
class ImageReader:
    """`decode`: the pixels of a member, full size; `check`: a strict decode for verify, the
    image's `(height, width)`; `channels`: the trailing dimensions of a batch slot of it (after
    the transform's size). Both read the header first and refuse an image over `pixel_budget`
    (samples, default `DEFAULT_PIXEL_BUDGET`) with a PixelBudgetError; every error they raise is
    a FieldValueError (`image.guard`)."""

    decode: Decode
    check: Check
    channels: tuple[int, ...]


def _decode_jpeg(data: Payload, pixel_budget: int = DEFAULT_PIXEL_BUDGET, /) -> AnyArray:
    return decode(data, DecodeOptions(pixel_budget=pixel_budget))


def _check_jpeg(data: Payload, pixel_budget: int = DEFAULT_PIXEL_BUDGET, /) -> tuple[int, int]:
    header = budgeted_jpeg(data, pixel_budget)
    guarded(simplejpeg.decode_jpeg, data, colorspace="RGB", strict=True)
    return header.height, header.width


def _check_png(data: Payload, pixel_budget: int = DEFAULT_PIXEL_BUDGET, /) -> tuple[int, int]:
    image = decode_png_bgr(data, pixel_budget)  # the colour order does not matter here
    return int(image.shape[0]), int(image.shape[1])


IMAGE_READERS: dict[str, ImageReader] = {
    "jpeg": ImageReader(decode=_decode_jpeg, check=_check_jpeg, channels=(3,)),
    "png": ImageReader(decode=decode_png, check=_check_png, channels=()),
}


def image_reader(type_name: str) -> ImageReader:
    """The reader of image type `type_name`; ValueError for a type that is not an image or has
    no reader here."""
    if not field_type(type_name).image or type_name not in IMAGE_READERS:
        raise ValueError(
            f"field type {type_name!r} has no image reader (reader/fields/images.py reads "
            f"{sorted(IMAGE_READERS)})"
        )
    return IMAGE_READERS[type_name]
