"""Adding a field type is one module plus its test: this test is that walk for a toy type.

`rgb` (a colour, `#rrggbb` text in a list file) is defined here as a new type's module would
define it: a `FieldTypeDef` with its encode and decode, registered by name. Nothing else in
fastpack learns of it, yet it goes through a build, the map-style Dataset (one sample and a
batch), and verify with decoding, and a member that is not a colour is refused at each step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.build_schema import read_build_schema
from fastpack.formats import (
    FieldSpec,
    FieldTypeDef,
    FieldValueError,
    ManifestError,
    Schema,
    decode_value,
    encode_value,
    field_type,
    register_field_type,
)
from fastpack.formats.field_types import Spec, unregister_field_type
from fastpack.formats.schema import Zstd
from fastpack.reader import Dataset
from fastpack.reader.verify import verify_dataset

from tests.conftest import jpeg_bytes

_COLOUR = re.compile(r"#[0-9a-f]{6}")


# -- the new type's module -------------------------------------------------------------------


def _encode(value: Any, spec: Spec) -> bytes:
    """`#RRGGBB` text (any case) or an int 0xRRGGBB: the member is `#rrggbb`, 7 ASCII bytes."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = f"#{int(value):06x}"
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if not isinstance(value, str) or not _COLOUR.fullmatch(value.strip().lower()):
        raise FieldValueError(f"a colour is #rrggbb, found {value!r:.40}")
    return value.strip().lower().encode("ascii")


def _encode_column(values: Sequence[Any], spec: Spec) -> list[bytes | FieldValueError]:
    out: list[bytes | FieldValueError] = []
    for value in values:
        try:
            out.append(_encode(value, spec))
        except FieldValueError as e:
            out.append(e)
    return out


def _decode(data: bytes, spec: Spec) -> Any:
    if not _COLOUR.fullmatch(data.decode("ascii")):
        raise ValueError(f"not #rrggbb: {data[:16]!r}")
    return np.int64(int(data[1:], 16))


RGB = FieldTypeDef(
    name="rgb",
    encode=_encode,
    decode=_decode,
    encode_column=_encode_column,
    batch="scalar",  # one int64 per sample: a batch is one (B,) array
    batch_dtype="<i8",
)

# -- its test ---------------------------------------------------------------------------------

COLOURS = ["#FF8000", "#00ff00", "#123abc", "#000000"]


@pytest.fixture
def rgb() -> Iterator[FieldTypeDef]:
    register_field_type(RGB)
    yield RGB
    unregister_field_type("rgb")


def _write_inputs(tmp_path: Path, colours: Sequence[str]) -> tuple[Path, Path]:
    images = tmp_path / "images"
    images.mkdir()
    rows = []
    for k, colour in enumerate(colours):
        (images / f"{k}.jpg").write_bytes(jpeg_bytes(24, 32, seed=k))
        rows.append({"path": f"images/{k}.jpg", "label": k % 2, "colour": colour})
    source = tmp_path / "list.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    schema = tmp_path / "schema.json"
    fields = [
        {"name": "jpg", "type": "jpeg", "column": "path"},
        {"name": "cls", "type": "class", "column": "label"},
        {"name": "colour.rgb", "type": "rgb", "column": "colour"},
    ]
    schema.write_text(json.dumps({"fields": fields}), encoding="utf-8")
    return source, schema


def test_a_registered_type_is_a_schema_type(rgb: FieldTypeDef) -> None:
    spec = FieldSpec(name="colour.rgb", type="rgb")
    assert field_type("rgb") is rgb
    assert decode_value(spec, encode_value(spec, "#ABCDEF")) == 0xABCDEF
    with pytest.raises(FieldValueError, match="a colour is #rrggbb"):
        encode_value(spec, "red")
    with pytest.raises(ManifestError, match="rgb members are never recompressed"):
        Schema((FieldSpec(name="c.rgb.zst", type="rgb", zstd=Zstd()),))
    with pytest.raises(ValueError, match="registered already"):
        register_field_type(rgb)


def test_an_unregistered_type_is_refused() -> None:
    with pytest.raises(ManifestError, match=r"field 'c': type 'rgb', expected one of \("):
        FieldSpec(name="c", type="rgb")


def test_a_new_type_goes_through_build_dataset_batch_and_verify(
    rgb: FieldTypeDef, tmp_path: Path
) -> None:
    source, schema = _write_inputs(tmp_path, [*COLOURS, "not a colour"])
    out = tmp_path / "out"
    options = BuildOptions(workers=1, progress=False, schema=read_build_schema(schema))
    summary = build(source, out, options)
    assert summary.samples == len(COLOURS)  # the last row is rejected for its colour
    rejects = (out / "rejects.jsonl").read_text(encoding="utf-8")
    assert "a colour is #rrggbb, found 'not a colour'" in rejects

    ds = Dataset(out, fields=("cls", "colour.rgb"))
    expected = [int(c[1:], 16) for c in COLOURS]
    assert [int(ds[i][1]) for i in range(len(ds))] == expected
    labels, colours = ds.__getitems__([2, 0, 3])
    assert (colours.dtype, colours.shape) == (np.int64, (3,))
    assert colours.tolist() == [expected[2], expected[0], expected[3]]
    assert labels.tolist() == [0, 0, 1]

    report = verify_dataset(out, decode=True)
    assert report.ok, report.format()
