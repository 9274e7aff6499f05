"""What a field type is (`FieldTypeDef`), and the value checks several types share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from ..errors import FieldValueError

# How a reader batches a field's values (reader/fields/layout.py gives each its column kinds):
# `image`: decoded pixels, stacked or decoded in place; `scalar`: one int64 per sample;
# `shaped`: arrays, stacked when the schema fixes their shape, else padded or listed;
# `ragged`: 1-d int64 arrays of any length, padded or listed; `object`: a list of values.
Batch = Literal["image", "scalar", "shaped", "ragged", "object"]
# What the DALI reader returns for a required field of the type: its member's bytes, or (`class`)
# the index's label.
Dali = Literal["bytes", "class"]


class Spec(Protocol):
    """What a field type reads of the field it encodes: the schema's entry for it
    (`formats.schema.FieldSpec`, which the registry's users pass) or anything with these
    attributes. A type module needs no more of the schema, so the schema can ask the registry
    about types without the two importing each other."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def dtype(self) -> str | None: ...
    @property
    def shape(self) -> tuple[int | None, ...] | None: ...
    @property
    def geometry(self) -> str | None: ...


Encode = Callable[[Any, Spec], bytes]
Decode = Callable[[bytes, Spec], Any]
EncodeColumn = Callable[[Sequence[Any], Spec], list["bytes | FieldValueError"]]


def _bytes_value(data: bytes, spec: Spec) -> Any:
    return data


def _as_written(text: str) -> Any:
    return text


@dataclass(frozen=True, kw_only=True)
class FieldTypeDef:
    """One field type: how its values become member bytes and back, and how every layer treats
    it. A new type is one module that builds one of these and `register_field_type`s it.

    - `encode(value, spec)`: the member's bytes (before zstd), FieldValueError when `value`
      does not fit `spec`; `decode(data, spec)`: the value of a member's (decompressed) bytes;
    - `encode_column(values, spec)`: `encode` of a shard's values at once, each value's bytes
      or its FieldValueError (None: `encode` one by one);
    - `parse_cell(text)`: the value of a CSV/TSV cell (default: the text as it is);
    - `verify(value, spec)`: checks of a decoded member beyond `decode` (default: it encodes
      again under `spec`: shape, dtype, integer ids), FieldValueError when it fails;
    - `compressible`: members may be zstd-compressed; `classes`: the field may name its
      values' classes (they are class numbers, remapped by a mix); `shaped`: dtype and shape
      apply; `geometries`: the geometries the field may carry;
    - `image`: members are images the reader decodes to pixels (its decoders are in
      reader/fields/images.py); `batch`: how a reader batches it (`Batch`); `batch_dtype`: the
      dtype of its arrays in a batch when the spec names none; `dali`: what the DALI reader
      returns for it (`Dali`);
    - for list files: `file_value`: a text value names the file that holds the member's bytes;
      `blank_value`: a blank text value is a value (not an absent member); `extension`: the
      member extension of a field inferred from a column of the type (None: none inferred)."""

    name: str
    encode: Encode
    decode: Decode = _bytes_value
    encode_column: EncodeColumn | None = None
    parse_cell: Callable[[str], Any] = _as_written
    verify: Callable[[Any, Spec], None] | None = None
    compressible: bool = False
    classes: bool = False
    shaped: bool = False
    geometries: tuple[str, ...] = ()
    image: bool = False
    batch: Batch = "object"
    batch_dtype: str | None = None
    dali: Dali = "bytes"
    file_value: bool = False
    blank_value: bool = False
    extension: str | None = None

    def encode_all(self, values: Sequence[Any], spec: Spec) -> list[bytes | FieldValueError]:
        """Each value's member bytes, or the FieldValueError that says why it does not fit."""
        if self.encode_column is not None:
            return self.encode_column(values, spec)
        return encode_each(self.encode, values, spec)

    def check_value(self, value: Any, spec: Spec) -> None:
        """Raise FieldValueError unless a decoded member's `value` is what `spec` says."""
        if self.verify is not None:
            self.verify(value, spec)
        else:
            self.encode(value, spec)


def encode_each(encode: Encode, values: Sequence[Any], spec: Spec) -> list[bytes | FieldValueError]:
    """`encode` of each value alone, a value that does not fit giving its FieldValueError: a
    column's slow path, where its fast path does not apply."""
    out: list[bytes | FieldValueError] = []
    for value in values:
        try:
            out.append(encode(value, spec))
        except FieldValueError as e:
            out.append(e)
    return out


def as_bytes(value: Any, spec: Spec) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise FieldValueError(f"a {spec.type} value is bytes, found {type(value).__name__}")


def integer(value: Any, what: str) -> int:
    """An int from an int (not a bool), an integral numpy scalar, or decimal text."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit() and text.isascii():
            return int(text)
    raise FieldValueError(f"{what} is not an integer: {value!r:.80}")
