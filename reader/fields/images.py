"""The reader's side of the image field types (formats/field_types/ marks them `image`): how
each is decoded to pixels and checked by verify, keyed by the same type name. It lives here, not
in formats/, because it needs the image libraries (simplejpeg, OpenCV) that formats/ does not
import. A new image type adds its entry to `IMAGE_READERS`; the other field types need nothing
here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import simplejpeg
from fastpack.formats import FieldValueError, field_type

from ..image.decode import decode, decode_png

AnyArray = npt.NDArray[Any]
Payload = bytes | memoryview


@dataclass(frozen=True, kw_only=True)
class ImageReader:
    """`decode`: the pixels of a member, full size; `check`: a strict decode for verify, the
    image's `(height, width)` (FieldValueError or the decoder's ValueError when it fails);
    `channels`: the trailing dimensions of a batch slot of it (after the transform's size)."""

    decode: Callable[[Payload], AnyArray]
    check: Callable[[Payload], tuple[int, int]]
    channels: tuple[int, ...]


def _check_jpeg(data: Payload) -> tuple[int, int]:
    simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True)
    height, width, _, _ = simplejpeg.decode_jpeg_header(data)
    return int(height), int(width)


def _check_png(data: Payload) -> tuple[int, int]:
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise FieldValueError("not a PNG that OpenCV decodes")
    return int(image.shape[0]), int(image.shape[1])


IMAGE_READERS: dict[str, ImageReader] = {
    "jpeg": ImageReader(decode=decode, check=_check_jpeg, channels=(3,)),
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
