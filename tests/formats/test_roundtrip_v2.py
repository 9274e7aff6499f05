"""`read(write(x)) == x` for version-2 datasets: random schemas (field names, types, optional
fields, ndarray dtypes and shapes, zstd with or without a dictionary) and random values, written
by the format's writers and read back through `DatasetFiles` and each field's codec."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.formats import AbsentFieldError, DatasetFiles, FieldSpec, Schema, Zstd
from fastpack.formats.field_codec import train_dictionary
from fastpack.formats.field_types import NDARRAY_DTYPES
from fastpack.formats.image_header import PNG_SIGNATURE
from fastpack.formats.schema import COMPRESSIBLE, FIELD_TYPES, ZSTD_SUFFIX
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from . import _v2
from ._golden_v2 import caption
from ._v2 import wants_dictionary, write_v2_dataset
from ._values import assert_read_back

_PART = st.from_regex(r"[a-z0-9_]{1,6}", fullmatch=True)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=6)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@st.composite
def _shapes(draw: st.DrawFn) -> tuple[int | None, ...]:
    rest = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    first = draw(st.none() | st.integers(0, 3))
    return (first, *rest) if draw(st.booleans()) else rest


@st.composite
def field_specs(draw: st.DrawFn) -> FieldSpec:
    kind = draw(st.sampled_from(FIELD_TYPES))
    name = ".".join(draw(st.lists(_PART, min_size=1, max_size=3)))
    options: dict[str, Any] = {"optional": draw(st.booleans())}
    if kind == "ndarray":
        if draw(st.booleans()):
            dtype = draw(st.sampled_from(["<f4", "<f8", "<i4"]))
            options.update(geometry="boxes", shape=(None, 4), dtype=dtype)
        else:
            options.update(dtype=draw(st.none() | st.sampled_from(NDARRAY_DTYPES)))
            options.update(shape=draw(st.none() | _shapes()))
    if kind == "png" and draw(st.booleans()):
        options["geometry"] = "mask"
    if kind in ("class", "class_ids") and draw(st.booleans()):
        options["classes"] = ("a", "b")
    if kind in COMPRESSIBLE and draw(st.booleans()):
        name += ZSTD_SUFFIX
        level = draw(st.integers(-7, 22))
        options["zstd"] = (
            wants_dictionary(name, level) if draw(st.booleans()) else Zstd(level=level)
        )
    elif name.endswith(ZSTD_SUFFIX):
        name += ".x"
    return FieldSpec(name=name, type=kind, **options)


def _array(spec: FieldSpec, draw: st.DrawFn) -> Any:
    dtype = np.dtype(spec.dtype) if spec.dtype else np.dtype(draw(st.sampled_from(NDARRAY_DTYPES)))
    if spec.shape is None:
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    else:
        shape = tuple(draw(st.integers(0, 3)) if d is None else d for d in spec.shape)
    finite = spec.geometry == "boxes"
    elements = hnp.from_dtype(dtype, allow_nan=not finite, allow_infinity=not finite)
    array = draw(hnp.arrays(dtype, shape, elements=elements))
    return array.tolist() if spec.geometry == "boxes" and draw(st.booleans()) else array


def _value(spec: FieldSpec, draw: st.DrawFn) -> Any:
    values: dict[str, Callable[[], Any]] = {
        "jpeg": lambda: b"\xff\xd8" + draw(st.binary(max_size=40)),
        "png": lambda: PNG_SIGNATURE + draw(st.binary(max_size=40)),
        "raw": lambda: draw(st.binary(max_size=60)),
        "class": lambda: draw(_INT64),
        "class_ids": lambda: draw(st.lists(_INT64, max_size=5)),
        "ndarray": lambda: _array(spec, draw),
        "text": lambda: draw(st.text(max_size=40)),
        "json": lambda: draw(_JSON),
    }
    return values[spec.type]()


@st.composite
def datasets(draw: st.DrawFn) -> tuple[Schema, list[dict[str, Any]], int]:
    fields = draw(st.lists(field_specs(), min_size=1, max_size=5, unique_by=lambda s: s.name))
    schema = Schema(tuple(fields))
    samples = []
    for _ in range(draw(st.integers(0, 9))):
        samples.append(
            {s.name: _value(s, draw) for s in fields if not (s.optional and draw(st.booleans()))}
        )
    return schema, samples, draw(st.integers(1, 4))


@functools.cache
def _fallback_dictionary() -> bytes:
    trained = train_dictionary([caption(i).encode() for i in range(16)], 1024)
    assert trained is not None
    return trained


def _train(samples: list[bytes], size: int) -> bytes:
    """A dictionary trained on `samples` when they are enough, else a fixed one (any dictionary
    makes valid frames; too few random values would make none)."""
    return train_dictionary(samples, size) or _fallback_dictionary()


@settings(max_examples=80, deadline=None)
@given(datasets())
def test_what_is_written_reads_back(data: tuple[Schema, list[dict[str, Any]], int]) -> None:
    schema, samples, per_shard = data
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(_v2, "train_dictionary", _train)
        root = Path(tmp)
        write_v2_dataset(root, schema, samples, samples_per_shard=per_shard)
        ds = DatasetFiles(root)
        assert ds.manifest.schema.names == schema.names
        assert len(ds) == len(samples)
        shards = [ds.shard_path(k).read_bytes() for k in range(len(ds.manifest.shards))]
        for i, sample in enumerate(samples):
            shard = shards[int(ds.index.shard[i])]
            for spec in ds.manifest.schema.fields:
                present = spec.name in sample
                assert bool(ds.index.present(spec.name)[i]) is present
                if not present:
                    with pytest.raises(AbsentFieldError):
                        ds.index.locate(i, spec.name, len(shard))
                    continue
                _, offset, size = ds.index.locate(i, spec.name, len(shard))
                got = ds.codec(spec.name).decode(shard[offset : offset + size])
                assert_read_back(spec, got, sample[spec.name])
