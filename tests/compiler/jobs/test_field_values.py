"""A shard's packed rows unpacked at once, as each row alone unpacks."""

from __future__ import annotations

from typing import Any

from fastpack.compiler.jobs.field_values import unpack_shard
from fastpack.compiler.sources.sample_fields import (
    FileRef,
    InvalidValue,
    MemberRef,
    pack_fields,
    unpack_fields,
)

ROWS: list[dict[str, Any]] = [
    {"txt": "a", "ids": [1, 2], "meta": {"k": None}},
    {},
    {"txt": FileRef("a/b.txt"), "n": 3},
    {"seg": MemberRef(1, 512, 20), "bad": InvalidValue("odd polygon")},
    {"txt": "lone \ud800 surrogate"},
    {"v": {"nested": "a field named v"}},
]


def test_a_shard_unpacks_as_its_rows_do() -> None:
    packed = [pack_fields(r) for r in ROWS]
    assert unpack_shard(packed) == [unpack_fields(p) for p in packed]
    assert unpack_shard([]) == []


def test_a_row_that_is_not_json_is_unpacked_alone() -> None:
    packed = [pack_fields(ROWS[0]), b"{not json"]
    try:
        unpack_fields(packed[1])
    except ValueError as e:
        expected = type(e)
    else:  # pragma: no cover
        raise AssertionError("unpack_fields took bad JSON")
    try:
        unpack_shard(packed)
    except expected:
        pass
    else:  # pragma: no cover
        raise AssertionError("unpack_shard took bad JSON")
