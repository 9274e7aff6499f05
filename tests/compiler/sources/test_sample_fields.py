"""The fields a scan hands to the shard jobs survive packing, whatever they hold."""

from __future__ import annotations

import pytest
from fastpack.compiler.sources.sample_fields import (
    FileRef,
    InvalidValue,
    MemberRef,
    pack_fields,
    unpack_fields,
)
from fastpack.formats import FieldSpec, FieldValueError, encode_value


def test_every_kind_of_value_round_trips() -> None:
    values = {
        "txt": "un chat noir",
        "labels.json": [3, 1],
        "json": {"a": [1, {"b": None}]},
        "seg.png": FileRef("masks/a b.png"),
        "boxes.npy": MemberRef(2, 1536, 80),
        "depth.npy": InvalidValue("annotation 4: bbox [1] is not 4 finite numbers"),
    }
    assert unpack_fields(pack_fields(values)) == values


def test_no_fields_pack_to_nothing() -> None:
    assert pack_fields({}) == b""
    assert unpack_fields(b"") == {}


def test_a_lone_surrogate_reaches_the_codec() -> None:
    """Text from a file name with undecodable bytes (os.fsdecode) packs; the text codec then
    rejects it with a reason instead of the scan failing."""
    values = unpack_fields(pack_fields({"txt": "caption \udc80"}))
    assert values == {"txt": "caption \udc80"}
    with pytest.raises(FieldValueError, match="text is not valid Unicode"):
        encode_value(FieldSpec(name="txt", type="text"), values["txt"])
