"""pyarrow, imported on first use (`pip install 'fastpack[parquet]'`), and what an arrow type
holds as far as fields care (`category_of`): bytes, text, numbers, lists, structs."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from fastpack.formats.field_types import NDARRAY_DTYPES

from ...errors import SourceError

Category = Literal["bytes", "string", "int", "float", "bool", "list", "struct", "map", "other"]


class MissingPyarrowError(SourceError, ImportError):
    """Reading Parquet needs pyarrow, which is not installed."""


def pyarrow_modules() -> tuple[Any, Any]:
    try:
        import pyarrow as pa  # noqa: PLC0415 -- optional: pyarrow
        import pyarrow.parquet as pq  # noqa: PLC0415 -- optional: pyarrow
    except ImportError as e:
        raise MissingPyarrowError(
            "reading Parquet needs pyarrow: pip install 'fastpack[parquet]'"
        ) from e
    return pa, pq


def is_bytes_struct(pa: Any, t: Any) -> bool:
    if not pa.types.is_struct(t) or t.get_field_index("bytes") < 0:
        return False
    return category_of(pa, t.field("bytes").type) == "bytes"


# arrow type checks (`pyarrow.types.is_*`, some only in newer pyarrow) per category, in order
_CATEGORIES: tuple[tuple[Category, tuple[str, ...]], ...] = (
    ("bytes", ("binary", "large_binary", "fixed_size_binary", "binary_view")),
    ("string", ("string", "large_string", "string_view")),
    ("int", ("integer",)),
    ("float", ("floating",)),
    ("bool", ("boolean",)),
    ("list", ("list", "large_list", "fixed_size_list", "list_view", "large_list_view")),
)


def category_of(pa: Any, t: Any) -> Category:
    """What an arrow type holds, as far as fields care (a dictionary type: its values')."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    for category, checks in _CATEGORIES:
        if any(getattr(pa.types, f"is_{c}", lambda _: False)(t) for c in checks):
            return category
    if is_bytes_struct(pa, t):
        return "bytes"
    if pa.types.is_struct(t):
        return "struct"
    return "map" if pa.types.is_map(t) else "other"


def _children(pa: Any, t: Any) -> list[Any]:
    if pa.types.is_dictionary(t):
        return [t.value_type]
    if category_of(pa, t) == "list":
        return [t.value_type]
    if pa.types.is_struct(t):
        return [t.field(i).type for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.key_type, t.item_type]
    return []


def holds_bytes(pa: Any, t: Any) -> bool:
    return category_of(pa, t) == "bytes" or any(holds_bytes(pa, c) for c in _children(pa, t))


def is_plain(pa: Any, t: Any) -> bool:
    """Whether `to_pylist` gives JSON values (no dates, decimals or bytes)."""
    if category_of(pa, t) in ("string", "int", "float", "bool") or pa.types.is_null(t):
        return True
    children = _children(pa, t)
    return bool(children) and all(is_plain(pa, c) for c in children)


def leaf_dtype(pa: Any, t: Any) -> tuple[str | None, tuple[int | None, ...] | None]:
    """The dtype and shape of an ndarray held by a list column (None: not one, or any shape)."""
    dims: list[int | None] = []
    while category_of(pa, t) == "list":
        dims.append(t.list_size if pa.types.is_fixed_size_list(t) else None)
        t = t.value_type
    if category_of(pa, t) not in ("int", "float", "bool"):
        return None, None
    dtype = np.dtype(t.to_pandas_dtype()).str
    dtype = dtype if dtype in NDARRAY_DTYPES else None
    return dtype, (tuple(dims) if None not in dims[1:] else None)
