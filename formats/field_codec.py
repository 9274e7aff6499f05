"""Member bytes of each field type (formats/SPEC.md section 4.1), and their zstd compression.

`encode` turns a value into the member's bytes and checks it against the field's spec;
`decode` reads them back. Both take the field's `FieldCodec`, which holds its zstd contexts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import zstandard

from .errors import FieldValueError
from .example import decode_varint
from .example import varint as encode_varint
from .field_types import field_type
from .schema import LABEL_TYPE, FieldSpec

__all__ = [
    "ZSTD_MAGIC",
    "FieldCodec",
    "decode_value",
    "encode_value",
    "train_dictionary",
]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_MIN_SAMPLES = 8  # fewer members than this train no dictionary
_MIN_TRAINING_BYTES = 4 * 1024  # nor do fewer bytes in all
_MIN_DICTIONARY = 256


def encode_value(spec: FieldSpec, value: Any) -> bytes:
    """The member bytes of `value` for field `spec`, before compression; FieldValueError says
    why a value does not fit the field."""
    return field_type(spec.type).encode(value, spec)


def decode_value(spec: FieldSpec, data: bytes | memoryview) -> Any:
    """A member's value from its (decompressed) bytes, by its type's `decode`: int (class),
    int64 array (class_ids), array (ndarray), str (text), the parsed value (json), bytes (jpeg,
    png, raw)."""
    try:
        return field_type(spec.type).decode(bytes(data), spec)
    except (ValueError, TypeError, OverflowError) as e:  # JSONDecodeError, UnicodeDecodeError
        raise FieldValueError(f"a {spec.type} member that does not decode ({e})") from e


def train_dictionary(samples: Sequence[bytes], size: int) -> bytes | None:
    """A zstd dictionary of at most `size` bytes trained on `samples` (member bytes before
    compression); None when the samples are too few or too alike to train one."""
    kept: list[bytes | bytearray | memoryview] = [s for s in samples if s]
    total = sum(len(s) for s in kept)
    if len(kept) < _MIN_SAMPLES or total < _MIN_TRAINING_BYTES:
        return None
    size = max(_MIN_DICTIONARY, min(size, total // 2))
    try:
        return bytes(zstandard.train_dictionary(size, kept).as_bytes())
    except zstandard.ZstdError:
        return None


class FieldCodec:
    """Encodes and decodes the members of one field, compressing them when the spec says so.

    `varint`: the members are protobuf varints, not ASCII decimals: the label field of a record
    dataset (formats/SPEC.md section 4.2), whose index entries delimit the label's varint.

    Holds zstd contexts (not thread-safe): one codec per thread or process."""

    def __init__(
        self, spec: FieldSpec, dictionary: bytes | None = None, *, varint: bool = False
    ) -> None:
        if varint and spec.type != LABEL_TYPE:
            raise ValueError(f"field {spec.name!r} is {spec.type}; only a class is a varint")
        self.spec = spec
        self.varint = varint
        self._compress: Any = None
        self._decompress: Any = None
        if spec.zstd is not None:
            d = zstandard.ZstdCompressionDict(dictionary) if dictionary is not None else None
            level = spec.zstd.level
            self._compress = zstandard.ZstdCompressor(
                level=level, dict_data=d, write_content_size=True, write_checksum=False
            )
            self._decompress = zstandard.ZstdDecompressor(dict_data=d)
        elif dictionary is not None:
            raise ValueError(f"field {spec.name!r} is not compressed; it takes no dictionary")

    @property
    def plain(self) -> bool:
        """Whether members are `encode_value`'s bytes as they are (`compress` keeps them)."""
        return not self.varint and self._compress is None

    def encode(self, value: Any) -> bytes:
        return self.compress(encode_value(self.spec, value))

    def compress(self, data: bytes) -> bytes:
        """The member of the bytes `encode_value` gave: as they are, compressed, or (`varint`)
        the label's varint."""
        if self.varint:
            return encode_varint(int(data))
        if self._compress is None:
            return data
        return self._compress.compress(data)  # type: ignore[no-any-return]

    def decompress(self, data: bytes | memoryview) -> bytes | memoryview:
        if self._decompress is None:
            return data
        if bytes(data[:4]) != ZSTD_MAGIC:
            raise FieldValueError(f"not a zstd frame (it starts with {bytes(data[:4])!r})")
        try:
            return self._decompress.decompress(data)  # type: ignore[no-any-return]
        except zstandard.ZstdError as e:
            raise FieldValueError(f"zstd frame does not decompress ({e})") from e

    def decode(self, data: bytes | memoryview) -> Any:
        return self.decode_plain(self.decompress(data))

    def decode_plain(self, plain: bytes | memoryview) -> Any:
        """The value of a member's bytes once decompressed (`decompress`)."""
        if self.varint:
            return np.int64(decode_varint(plain))
        return decode_value(self.spec, plain)
