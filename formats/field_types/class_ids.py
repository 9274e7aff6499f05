"""`class_ids`: a list of class numbers, as a JSON list without spaces (`[3,17]`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import FieldValueError
from ._base import FieldTypeDef, Spec, encode_each, integer
from .json_ import encode_json


def class_ids(value: Any) -> list[int]:
    """The ints of a list (or array, or space-separated text) of class numbers."""
    if isinstance(value, str):
        value = value.split()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise FieldValueError(f"class ids are a list of integers, found {value!r:.80}")
    if all(type(v) is int for v in value):  # the common case, checked at C speed
        return list(value)
    return [integer(v, f"class id {k}") for k, v in enumerate(value)]


def _encode(value: Any, spec: Spec) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        value = json.loads(encode_json(value, spec))
    return ("[" + ",".join(map(str, class_ids(value))) + "]").encode("ascii")  # JSON, no spaces


def _plain(value: Any) -> bool:
    return type(value) is list and all(type(v) is int for v in value)


def _encode_column(values: Sequence[Any], spec: Spec) -> list[bytes | FieldValueError]:
    """Lists of ints (a list file's or a JSON source's values) written in one pass: Python's
    `str` of a list of ints is its JSON with ", " between items."""
    if all(map(_plain, values)):
        return [str(v).replace(" ", "").encode("ascii") for v in values]
    return encode_each(_encode, values, spec)


def _decode(data: bytes, spec: Spec) -> Any:
    ids = json.loads(data)
    if not isinstance(ids, list):
        raise TypeError(f"a JSON list, found {ids!r:.80}")
    return np.array(class_ids(ids), dtype=np.int64)


def _parse_cell(text: str) -> Any:
    """Space-separated integers, or a JSON list."""
    if not text.lstrip().startswith("["):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise FieldValueError(f"not a JSON list ({e.msg} at character {e.pos})") from e


CLASS_IDS = FieldTypeDef(
    name="class_ids",
    encode=_encode,
    decode=_decode,
    encode_column=_encode_column,
    parse_cell=_parse_cell,
    compressible=True,
    classes=True,
    batch="ragged",
    batch_dtype="<i8",
    extension="json",
)
