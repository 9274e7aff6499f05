"""`png`: a PNG file's bytes; with geometry `mask`, a mask of the image's size."""

from __future__ import annotations

from ..image_header import PNG_SIGNATURE
from ._base import FieldTypeDef
from .images import image_encoder

PNG = FieldTypeDef(
    name="png",
    encode=image_encoder(PNG_SIGNATURE, "PNG"),
    geometries=("mask",),
    image=True,
    batch="image",
    file_value=True,
)
