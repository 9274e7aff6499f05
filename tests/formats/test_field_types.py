"""The field-type registry: every built-in type registered, and a shard's values encoded at once
(`encode_all`) exactly as one by one (`encode`), errors included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastpack.formats import FieldSpec, FieldValueError, ManifestError, field_type
from fastpack.formats.field_types import FieldTypeDef, field_type_names
from fastpack.formats.schema import FIELD_TYPES

COLUMNS: dict[str, list[Any]] = {
    "class": [0, 7, -3, 2**40, "12", b"5", True, 1.5, "x", np.int64(4)],
    "class_ids": [[], [1, 2, 3], [5], "1 2", [1, "2"], (3, 4), np.array([6, 7]), b"[1,2]",
                  [True], "[1]", {"a": 1}, [1.5]],
    "text": ["", "héllo", "a\ud800b", b"caf\xc3\xa9", b"\xff", 3, "z" * 500],
    "json": [{}, {"a": [1, 2.5, None], "é": "ü"}, [1, 2], "s", 3, None, b'{"a": 1}', b"{",
             {"nan": float("nan")}, {"s": "\ud800"}, {1: object()}, bytearray(b"[]")],
    "raw": [b"", b"\x00\x01", bytearray(b"ab"), "text", 3],
    "jpeg": [b"\xff\xd8\xff\xe0", b"\x89PNG", "x"],
    "png": [b"\x89PNG\r\n\x1a\nrest", b"\xff\xd8", 1],
    "ndarray": [[1, 2], [[1.5]], np.zeros((2, 3), "<f4"), [[1], [2, 3]], "x", []],
}  # fmt: skip


def _one_by_one(kind: FieldTypeDef, values: list[Any], spec: FieldSpec) -> list[Any]:
    out: list[Any] = []
    for value in values:
        try:
            out.append(kind.encode(value, spec))
        except FieldValueError as e:
            out.append(("error", str(e)))
    return out


def test_every_builtin_type_is_registered() -> None:
    assert field_type_names()[: len(FIELD_TYPES)] == FIELD_TYPES
    assert FIELD_TYPES == ("jpeg", "png", "class", "class_ids", "ndarray", "text", "json", "raw")
    with pytest.raises(ManifestError, match=r"type 'nope', expected one of \('jpeg'"):
        field_type("nope")


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_a_column_encodes_as_its_values_do(name: str) -> None:
    kind = field_type(name)
    spec = FieldSpec(name="f", type=name)
    values = COLUMNS[name]
    at_once = [
        ("error", str(v)) if isinstance(v, FieldValueError) else v
        for v in kind.encode_all(values, spec)
    ]
    assert at_once == _one_by_one(kind, values, spec)
    # a column of the common case only (the fast path), and each value of it alone
    plain = [v for v, one in zip(values, at_once, strict=True) if isinstance(one, bytes)]
    assert kind.encode_all(plain, spec) == _one_by_one(kind, plain, spec)


def test_the_registry_says_how_each_type_is_read() -> None:
    assert [t for t in FIELD_TYPES if field_type(t).image] == ["jpeg", "png"]
    assert [t for t in FIELD_TYPES if field_type(t).classes] == ["class", "class_ids"]
    assert field_type("class").dali == "class"
    batches = {field_type(t).batch for t in FIELD_TYPES}
    assert batches == {"image", "scalar", "ragged", "shaped", "object"}


def test_the_registry_says_how_a_list_file_fills_each_type() -> None:
    assert [t for t in FIELD_TYPES if field_type(t).file_value] == ["jpeg", "png", "raw"]
    assert [t for t in FIELD_TYPES if field_type(t).blank_value] == ["text", "json"]
    extensions = {t: field_type(t).extension for t in FIELD_TYPES if field_type(t).extension}
    assert extensions == {
        "class": "cls",
        "class_ids": "json",
        "ndarray": "npy",
        "text": "txt",
        "json": "json",
    }
