"""What reading a member back must give for the value that was written: the comparison that the
golden and round-trip tests share."""

from __future__ import annotations

from typing import Any

import numpy as np
from fastpack.formats import FieldSpec


def assert_read_back(spec: FieldSpec, got: Any, written: Any) -> None:
    """`got` (what `FieldCodec.decode` returned) is `written` (what `encode` was given): the same
    bytes, integers, text or JSON; an array of the same shape, values and dtype (the spec's, else
    the written one's)."""
    where = f"field {spec.name!r}"
    if spec.type in ("jpeg", "png", "raw"):
        assert got == bytes(written), where
    elif spec.type == "class":
        assert isinstance(got, np.int64), where
        assert int(got) == int(written), where
    elif spec.type == "class_ids":
        assert got.dtype == np.int64, where
        assert got.tolist() == [int(v) for v in written], where
    elif spec.type == "ndarray":
        want = np.asarray(written)
        dtype = np.dtype(spec.dtype) if spec.dtype is not None else want.dtype
        assert isinstance(got, np.ndarray), where
        assert got.dtype == dtype, (where, got.dtype, dtype)
        assert got.shape == want.shape or (want.size == 0 and got.size == 0), where
        assert np.array_equal(
            got, want.astype(dtype).reshape(got.shape), equal_nan=dtype.kind == "f"
        )
    elif spec.type == "text":
        assert got == written, where
    else:
        assert spec.type == "json", where
        assert got == written, where
