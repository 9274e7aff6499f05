"""`png`: a PNG file's bytes; with geometry `mask`, a mask of the image's size."""

from __future__ import annotations

from ._base import FieldTypeDef
from .images import image_encoder

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

PNG = FieldTypeDef(
    name="png",
    encode=image_encoder(PNG_SIGNATURE, "PNG"),
    geometries=("mask",),
    image=True,
    batch="image",
    file_value=True,
)
