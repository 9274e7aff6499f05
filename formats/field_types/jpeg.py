"""`jpeg`: a JPEG file's bytes; the first jpeg field is the sample's image."""

from __future__ import annotations

from ..image_header import JPEG_SIGNATURE
from ._base import FieldTypeDef
from .images import image_encoder

JPEG = FieldTypeDef(
    name="jpeg",
    encode=image_encoder(JPEG_SIGNATURE, "JPEG"),
    image=True,
    batch="image",
    file_value=True,
)
