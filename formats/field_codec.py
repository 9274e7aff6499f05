"""Member bytes of each field type (formats/SPEC.md section 4.1), and their zstd compression.

`encode` turns a value into the member's bytes and checks it against the field's spec;
`decode` reads them back. Both take the field's `FieldCodec`, which holds its zstd contexts.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import zstandard

from .errors import FieldValueError
from .example import decode_varint
from .example import varint as encode_varint
from .schema import FieldSpec

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CLASS_MEMBER = re.compile(rb"-?[0-9]+")  # SPEC 4.1: no spaces, signs or underscores but "-"
JPEG_SIGNATURE = b"\xff\xd8"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _as_bytes(value: Any, spec: FieldSpec) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise FieldValueError(f"a {spec.type} value is bytes, found {type(value).__name__}")


def _integer(value: Any, what: str) -> int:
    """An int from an int (not a bool), an integral numpy scalar, or decimal text."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit() and text.isascii():
            return int(text)
    raise FieldValueError(f"{what} is not an integer: {value!r:.80}")


def _class_ids(value: Any) -> list[int]:
    if isinstance(value, str):
        value = value.split()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise FieldValueError(f"class ids are a list of integers, found {value!r:.80}")
    if all(type(v) is int for v in value):  # the common case, checked at C speed
        return list(value)
    return [_integer(v, f"class id {k}") for k, v in enumerate(value)]


def _check_shape(shape: tuple[int, ...], spec: FieldSpec) -> None:
    expected = spec.shape
    if expected is None:
        return
    if len(shape) != len(expected) or any(
        e is not None and e != d for e, d in zip(expected, shape, strict=True)
    ):
        wanted = "(" + ", ".join("N" if e is None else str(e) for e in expected) + ")"
        raise FieldValueError(f"array of shape {shape}, expected {wanted}")


def _ndarray(value: Any, spec: FieldSpec) -> npt.NDArray[Any]:
    if isinstance(value, (bytes, bytearray, memoryview)):
        array = _load_npy(bytes(value))
    else:
        try:
            array = np.asarray(value)
        except (ValueError, TypeError) as e:  # ragged lists
            raise FieldValueError(f"not an array: {e}") from e
    if array.dtype.kind not in "biuf":
        raise FieldValueError(f"array of dtype {array.dtype}, expected a number type")
    if spec.dtype is not None:
        target = np.dtype(spec.dtype)
        if array.dtype != target:
            if (
                array.size
                and not np.can_cast(array, target, "same_kind")
                and not (array.dtype.kind in "iu" and target.kind in "iuf")
            ):
                raise FieldValueError(f"array of dtype {array.dtype} does not cast to {target}")
            cast = array.astype(target)
            if not np.array_equal(cast, array, equal_nan=array.dtype.kind == "f"):
                raise FieldValueError(f"array of dtype {array.dtype} loses values as {target}")
            array = cast
    if array.shape == (0,) and spec.shape is not None and spec.shape[0] is None:
        array = array.reshape((0, *spec.shape[1:]))  # `[]`: no boxes
    _check_shape(array.shape, spec)
    if spec.geometry == "boxes" and array.size and not np.isfinite(array).all():
        raise FieldValueError("boxes hold a value that is not finite")
    return array


def _save_npy(array: npt.NDArray[Any]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(array, order="C"), allow_pickle=False)
    return buffer.getvalue()


def _load_npy(data: bytes) -> npt.NDArray[Any]:
    try:
        return np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise FieldValueError(f"not an .npy array ({e})") from e


def _text(value: Any) -> bytes:
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


# made once: json.dumps with options other than the defaults makes a new encoder each call
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _json(value: Any, spec: FieldSpec) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = _text(value)
        try:
            json.loads(data)
        except json.JSONDecodeError as e:
            raise FieldValueError(f"not valid JSON ({e.msg} at byte {e.pos})") from e
        return data
    try:
        return _JSON.encode(value).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise FieldValueError(f"not representable as JSON ({e})") from e


def _image(value: Any, spec: FieldSpec) -> bytes:
    data = _as_bytes(value, spec)
    signature = JPEG_SIGNATURE if spec.type == "jpeg" else PNG_SIGNATURE
    if not data.startswith(signature):
        raise FieldValueError(f"not a {spec.type.upper()} (it starts with {data[:8]!r})")
    return data


def _class(value: Any, spec: FieldSpec) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("ascii", "replace")
    return str(_integer(value, "the class")).encode("ascii")


def _class_list(value: Any, spec: FieldSpec) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        value = json.loads(_json(value, spec))
    return ("[" + ",".join(map(str, _class_ids(value))) + "]").encode("ascii")  # JSON, no spaces


_ENCODERS: dict[str, Callable[[Any, FieldSpec], bytes]] = {
    "jpeg": _image,
    "png": _image,
    "raw": _as_bytes,
    "class": _class,
    "class_ids": _class_list,
    "ndarray": lambda value, spec: _save_npy(_ndarray(value, spec)),
    "text": lambda value, spec: _text(value),
    "json": _json,
}


def encode_value(spec: FieldSpec, value: Any) -> bytes:
    """The member bytes of `value` for field `spec`, before compression; FieldValueError says
    why a value does not fit the field."""
    return _ENCODERS[spec.type](value, spec)


def decode_value(spec: FieldSpec, data: bytes | memoryview) -> Any:
    """A member's value from its (decompressed) bytes: int (class), int64 array (class_ids),
    array (ndarray), str (text), the parsed value (json), bytes (jpeg, png, raw)."""
    kind = spec.type
    try:
        if kind == "class":
            text = bytes(data)
            if not _CLASS_MEMBER.fullmatch(text):
                raise ValueError(f"expected ASCII -?[0-9]+, found {text[:40]!r}")
            return np.int64(int(text))
        if kind == "class_ids":
            ids = json.loads(bytes(data))
            if not isinstance(ids, list):
                raise TypeError(f"a JSON list, found {ids!r:.80}")
            return np.array(_class_ids(ids), dtype=np.int64)
        if kind == "ndarray":
            return _load_npy(bytes(data))
        if kind == "text":
            return bytes(data).decode("utf-8")
        if kind == "json":
            return json.loads(bytes(data))
    except (ValueError, TypeError, OverflowError) as e:  # JSONDecodeError, UnicodeDecodeError
        raise FieldValueError(f"a {kind} member that does not decode ({e})") from e
    return bytes(data)


def train_dictionary(samples: Sequence[bytes], size: int) -> bytes | None:
    """A zstd dictionary of at most `size` bytes trained on `samples` (member bytes before
    compression); None when the samples are too few or too alike to train one."""
    kept: list[bytes | bytearray | memoryview] = [s for s in samples if s]
    total = sum(len(s) for s in kept)
    if len(kept) < 8 or total < 4 * 1024:
        return None
    size = max(256, min(size, total // 2))
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
        if varint and spec.type != "class":
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

    def encode(self, value: Any) -> bytes:
        data = encode_value(self.spec, value)
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
