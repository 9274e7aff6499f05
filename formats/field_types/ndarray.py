"""`ndarray`: a numeric array as an `.npy` file; the spec may fix its dtype and shape, and mark
it as `boxes` (N x 4, x0 y0 x1 y1 in the image's pixels)."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import FieldValueError
from ._base import FieldTypeDef, Spec

# the dtypes an ndarray field may declare: numeric, little-endian or single-byte, no objects
NDARRAY_DTYPES = (
    "|b1", "|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8",
)  # fmt: skip


def _check_shape(shape: tuple[int, ...], spec: Spec) -> None:
    expected = spec.shape
    if expected is None:
        return
    if len(shape) != len(expected) or any(
        e is not None and e != d for e, d in zip(expected, shape, strict=True)
    ):
        wanted = "(" + ", ".join("N" if e is None else str(e) for e in expected) + ")"
        raise FieldValueError(f"array of shape {shape}, expected {wanted}")


def _cast(array: npt.NDArray[Any], target: np.dtype[Any]) -> npt.NDArray[Any]:
    if (
        array.size
        and not np.can_cast(array, target, "same_kind")
        and not (array.dtype.kind in "iu" and target.kind in "iuf")
    ):
        raise FieldValueError(f"array of dtype {array.dtype} does not cast to {target}")
    cast = array.astype(target)
    if not np.array_equal(cast, array, equal_nan=array.dtype.kind == "f"):
        raise FieldValueError(f"array of dtype {array.dtype} loses values as {target}")
    return cast


def as_array(value: Any, spec: Spec) -> npt.NDArray[Any]:
    """`value` (an array, nested lists, `.npy` bytes) as the array the field stores."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        array = load_npy(bytes(value))
    else:
        try:
            array = np.asarray(value)
        except (ValueError, TypeError) as e:  # ragged lists
            raise FieldValueError(f"not an array: {e}") from e
    if array.dtype.kind not in "biuf":
        raise FieldValueError(f"array of dtype {array.dtype}, expected a number type")
    if spec.dtype is not None and array.dtype != np.dtype(spec.dtype):
        array = _cast(array, np.dtype(spec.dtype))
    if array.shape == (0,) and spec.shape is not None and spec.shape[0] is None:
        array = array.reshape((0, *spec.shape[1:]))  # `[]`: no boxes
    _check_shape(array.shape, spec)
    if spec.geometry == "boxes" and array.size and not np.isfinite(array).all():
        raise FieldValueError("boxes hold a value that is not finite")
    return array


def save_npy(array: npt.NDArray[Any]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(array, order="C"), allow_pickle=False)
    return buffer.getvalue()


def load_npy(data: bytes) -> npt.NDArray[Any]:
    try:
        return np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise FieldValueError(f"not an .npy array ({e})") from e


def _encode(value: Any, spec: Spec) -> bytes:
    return save_npy(as_array(value, spec))


def _decode(data: bytes, spec: Spec) -> Any:
    return load_npy(data)


def _verify(value: Any, spec: Spec) -> None:
    if spec.dtype is not None and value.dtype != spec.dtype:
        raise FieldValueError(f"array of dtype {value.dtype}, the schema says {spec.dtype}")
    as_array(value, spec)  # the schema's shape, finite boxes


def _parse_cell(text: str) -> Any:
    """A JSON (nested) list."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise FieldValueError(f"not a JSON list ({e.msg} at character {e.pos})") from e


NDARRAY = FieldTypeDef(
    name="ndarray",
    encode=_encode,
    decode=_decode,
    parse_cell=_parse_cell,
    verify=_verify,
    compressible=True,
    shaped=True,
    geometries=("boxes",),
    batch="shaped",
    extension="npy",
)
