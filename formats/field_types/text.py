"""`text`: UTF-8 text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FieldValueError
from ._base import FieldTypeDef, Spec, encode_each


def utf8(value: Any) -> bytes:
    """`value` (str, or bytes that are UTF-8) as UTF-8 bytes."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:  # lone surrogates
            raise FieldValueError(f"text is not valid Unicode ({e.reason})") from e
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FieldValueError(f"text is not UTF-8 ({e.reason} at byte {e.start})") from e
        return data
    raise FieldValueError(f"text is a string, found {type(value).__name__}")


def _encode(value: Any, spec: Spec) -> bytes:
    return utf8(value)


def _encode_column(values: Sequence[Any], spec: Spec) -> list[bytes | FieldValueError]:
    if all(type(v) is str for v in values):
        try:
            return [v.encode("utf-8") for v in values]
        except UnicodeEncodeError:
            pass  # a lone surrogate: each value on its own says which
    return encode_each(lambda value, _spec: utf8(value), values, spec)


def _decode(data: bytes, spec: Spec) -> Any:
    return data.decode("utf-8")


TEXT = FieldTypeDef(
    name="text",
    encode=_encode,
    decode=_decode,
    encode_column=_encode_column,
    compressible=True,
    blank_value=True,
    extension="txt",
)
