"""`class`: one class number, as ASCII decimals (SPEC 4.1: no spaces, signs or underscores
but "-"); the first class field fills the index's label section."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import FieldValueError
from ._base import FieldTypeDef, Spec, encode_each, integer

_CLASS_MEMBER = re.compile(rb"-?[0-9]+")


def _encode(value: Any, spec: Spec) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("ascii", "replace")
    return str(integer(value, "the class")).encode("ascii")


def _encode_column(values: Sequence[Any], spec: Spec) -> list[bytes | FieldValueError]:
    if all(type(v) is int for v in values):  # the common case: one pass at C speed
        return [b"%d" % v for v in values]
    return encode_each(_encode, values, spec)


def _decode(data: bytes, spec: Spec) -> Any:
    if not _CLASS_MEMBER.fullmatch(data):
        raise ValueError(f"expected ASCII -?[0-9]+, found {data[:40]!r}")
    return np.int64(int(data))


CLASS = FieldTypeDef(
    name="class",
    encode=_encode,
    decode=_decode,
    encode_column=_encode_column,
    classes=True,
    batch="scalar",
    batch_dtype="<i8",
    dali="class",
    extension="cls",
)
