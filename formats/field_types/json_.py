"""`json`: a JSON value, as compact UTF-8 JSON (or the JSON text a source gave, kept as
written)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import FieldValueError
from ._base import FieldTypeDef, Spec
from .text import utf8

# made once: json.dumps with options other than the defaults makes a new encoder each call
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_json(value: Any, spec: Spec) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = utf8(value)
        try:
            json.loads(data)
        except json.JSONDecodeError as e:
            raise FieldValueError(f"not valid JSON ({e.msg} at byte {e.pos})") from e
        return data
    try:
        return _JSON.encode(value).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise FieldValueError(f"not representable as JSON ({e})") from e


def _c_encoder() -> Callable[[Any], str]:
    """`_JSON.encode` for objects without its per-call set-up: the C encoder it makes on each
    call (CPython's `json.encoder.c_make_encoder`, same arguments), made once; `_JSON.encode`
    where there is none."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _JSON.encode
    encoder = make(
        {}, _JSON.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    return lambda value: "".join(encoder(value, 0))


def _encode_column(values: Sequence[Any], spec: Spec) -> list[bytes | FieldValueError]:
    encode = _c_encoder()
    out: list[bytes | FieldValueError] = []
    for value in values:
        if type(value) is dict:  # the common case, without the checks bytes need
            try:
                out.append(encode(value).encode("utf-8"))
                continue
            except (TypeError, ValueError) as e:
                out.append(FieldValueError(f"not representable as JSON ({e})"))
                encode = _c_encoder()  # its circular-reference markers may hold this value
                continue
        try:
            out.append(encode_json(value, spec))
        except FieldValueError as e:
            out.append(e)
    return out


def _decode(data: bytes, spec: Spec) -> Any:
    return json.loads(data)


def _parse_cell(text: str) -> Any:
    return text.encode("utf-8")  # checked (and kept as written) by the encoder


JSON = FieldTypeDef(
    name="json",
    encode=encode_json,
    decode=_decode,
    encode_column=_encode_column,
    parse_cell=_parse_cell,
    compressible=True,
    blank_value=True,
    extension="json",
)
