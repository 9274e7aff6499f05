"""What jpeg and png share: members are the image file's bytes, checked by their signature."""

from __future__ import annotations

from typing import Any

from ..errors import FieldValueError
from ._base import Spec, as_bytes


def image_encoder(signature: bytes, what: str) -> Any:
    """An `encode` that takes bytes starting with `signature` (a `what` image) as they are."""

    def encode(value: Any, spec: Spec) -> bytes:
        data = as_bytes(value, spec)
        if not data.startswith(signature):
            raise FieldValueError(f"not a {what} (it starts with {data[:8]!r})")
        return data

    return encode
