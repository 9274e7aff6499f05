"""What jpeg and png share: members are the image file's bytes, checked by their signature."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import FieldValueError
from ._base import as_bytes

if TYPE_CHECKING:
    from ..schema import FieldSpec


def image_encoder(signature: bytes, what: str) -> Any:
    """An `encode` that takes bytes starting with `signature` (a `what` image) as they are."""

    def encode(value: Any, spec: FieldSpec) -> bytes:
        data = as_bytes(value, spec)
        if not data.startswith(signature):
            raise FieldValueError(f"not a {what} (it starts with {data[:8]!r})")
        return data

    return encode
