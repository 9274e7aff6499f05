"""`read(build(x)) == x` through the compiler: random schemas (class_ids, ndarray, text and json
fields, optional or not, zstd with or without a trained dictionary) and random values, written
as a JSONL list file of real JPEGs with a schema file, built, and read back both through
`Dataset(fields=...)` and through `DatasetFiles` and each field's codec."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.build_schema import read_build_schema
from fastpack.formats import read_manifest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpack import Dataset
from tests.compiler._fields import read_fields
from tests.compiler._helpers import QUIET
from tests.conftest import jpeg_bytes

KINDS = ("class_ids", "ndarray", "text", "json")
DTYPES = ("<f4", "<i4", "|u1")
EXTENSIONS = {"class_ids": "ids.json", "ndarray": "npy", "text": "txt", "json": "json"}
# A long value for fields with a dictionary: enough bytes for one to be trained (8 samples).
FILLER = " ".join(f"word{i % 23} of the caption" for i in range(24))

_INT64 = st.integers(-(2**63), 2**63 - 1)
_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)
# JSON null at the top is an absent value in a list file, so a json value is anything else.
_JSON_VALUE = _JSON.filter(lambda v: v is not None)


@dataclass(frozen=True)
class Field:
    """A schema file entry and the column that holds its values."""

    entry: dict[str, Any]
    column: str

    @property
    def name(self) -> str:
        return str(self.entry["name"])

    @property
    def type(self) -> str:
        return str(self.entry["type"])

    @property
    def dictionary(self) -> bool:
        return bool(self.entry.get("zstd", {}).get("dictionary"))


@dataclass(frozen=True)
class Case:
    fields: list[Field]
    samples: list[dict[str, Any]]  # by field name; a field left out is absent
    shard_size: int


@st.composite
def fields(draw: st.DrawFn, k: int) -> Field:
    kind = draw(st.sampled_from(KINDS))
    entry: dict[str, Any] = {"name": f"f{k}.{EXTENSIONS[kind]}", "type": kind}
    if draw(st.booleans()):
        entry["optional"] = True
    if kind == "ndarray":
        entry["dtype"] = draw(st.sampled_from(DTYPES))
        # A fixed zero only last: JSON `[]` cannot tell (0,) from (0, 2). A `[None, k]`
        # field's `[]` is read as (0, k).
        fixed = st.lists(st.integers(0, 3), max_size=2).filter(lambda s: 0 not in s[:-1])
        variable = st.integers(0, 3).map(lambda k: [None, k])
        entry["shape"] = draw(fixed | variable)
    if kind == "class_ids" and draw(st.booleans()):
        entry["classes"] = ["zero", "één", "二"]
    if draw(st.booleans()):
        entry["name"] += ".zst"
        entry["zstd"] = {"level": draw(st.integers(-7, 22)), "dictionary": draw(st.booleans())}
    return Field(entry, f"c{k}")


def _array(field: Field, draw: st.DrawFn) -> npt.NDArray[Any]:
    shape = tuple(draw(st.integers(0, 3)) if d is None else d for d in field.entry["shape"])
    dtype = np.dtype(field.entry["dtype"])
    elements = {
        "<f4": st.floats(width=32, allow_nan=False, allow_infinity=False),
        "<i4": st.integers(-(2**31), 2**31 - 1),
        "|u1": st.integers(0, 255),
    }[dtype.str]
    count = int(np.prod(shape, dtype=np.int64))
    values = draw(st.lists(elements, min_size=count, max_size=count))
    return np.array(values, dtype).reshape(shape)


def _value(field: Field, draw: st.DrawFn) -> Any:
    if field.type == "class_ids":
        return draw(st.lists(_INT64, max_size=5))
    if field.type == "ndarray":
        return _array(field, draw)
    # With a dictionary: long, alike values, for one to be trained on.
    if field.type == "text":
        text = draw(st.text(max_size=20))
        return text + FILLER if field.dictionary else text
    value = draw(_JSON_VALUE)
    return {"v": value, "filler": FILLER} if field.dictionary else value


@st.composite
def cases(draw: st.DrawFn) -> Case:
    count = draw(st.integers(1, 4))
    chosen = [draw(fields(k)) for k in range(count)]
    samples = []
    for _ in range(draw(st.integers(1, 9))):
        samples.append(
            {
                f.name: _value(f, draw)
                for f in chosen
                if not (f.entry.get("optional") and draw(st.booleans()))
            }
        )
    return Case(chosen, samples, draw(st.integers(1, 8192)))


def _json_value(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


def write_source(root: Path, case: Case) -> tuple[Path, Path]:
    """The list file (JSONL, non-ASCII as UTF-8) and the schema file of `case`, with a JPEG per
    sample; an absent value is a missing key or null."""
    root.mkdir()
    lines = []
    for i, sample in enumerate(case.samples):
        (root / f"{i}.jpg").write_bytes(jpeg_bytes(8 + i, 16, seed=i))
        item: dict[str, Any] = {"path": f"{i}.jpg"}
        for k, field in enumerate(case.fields):
            if field.name in sample:
                item[field.column] = _json_value(sample[field.name])
            elif (i + k) % 2:
                item[field.column] = None
        lines.append(json.dumps(item, ensure_ascii=False))
    listing = root / "list.jsonl"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    entries = [{"name": "jpg", "type": "jpeg", "column": "path"}]
    entries += [{**f.entry, "column": f.column} for f in case.fields]
    schema = root / "schema.json"
    schema.write_text(json.dumps({"fields": entries}, ensure_ascii=False), encoding="utf-8")
    return listing, schema


def assert_same(field: Field, got: Any, written: Any, where: str) -> None:
    """`got` (read back) is `written` (given to the build): arrays of the schema's dtype and the
    written shape and values, int64 class ids, the same text or JSON, None for absent."""
    where = f"{where} field {field.name!r}"
    if written is None:
        assert got is None, where
    elif field.type == "ndarray":
        assert isinstance(got, np.ndarray), where
        assert (got.dtype, got.shape) == (written.dtype, written.shape), where
        np.testing.assert_array_equal(got, written, err_msg=where)
    elif field.type == "class_ids":
        assert isinstance(got, np.ndarray), where
        assert got.dtype == np.int64, where
        assert got.tolist() == written, where
    else:
        assert type(got) is type(written), where
        assert got == written, where


def build_and_check(tmp: Path, case: Case) -> Path:
    """Build `case` and check every field of every sample read back both ways; the dataset."""
    listing, schema_file = write_source(tmp / "src", case)
    out = tmp / "out"
    options = BuildOptions(
        schema=read_build_schema(schema_file), workers=1, strict=True,
        shard_size=case.shard_size, dictionary_size=1024, **QUIET,
    )  # fmt: skip
    summary = build(listing, out, options)
    assert (summary.samples, summary.rejected) == (len(case.samples), 0)
    names = tuple(f.name for f in case.fields)
    stored = read_fields(out)
    with Dataset(out, fields=names) as dataset:
        assert len(dataset) == len(case.samples)
        for i, written in enumerate(case.samples):
            assert stored[i]["source"] == f"{i}.jpg"
            assert stored[i]["jpg"] == (tmp / "src" / f"{i}.jpg").read_bytes()
            item = dataset[i]
            for field, got in zip(case.fields, item, strict=True):
                want = written.get(field.name)
                assert_same(field, got, want, f"Dataset sample {i}")
                assert_same(field, stored[i].get(field.name), want, f"codec sample {i}")
    return out


@settings(max_examples=12, deadline=None)
@given(cases())
def test_what_is_built_reads_back(case: Case) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build_and_check(Path(tmp), case)


def test_a_field_with_a_trained_dictionary_reads_back(tmp_path: Path) -> None:
    entry = {"name": "f0.txt.zst", "type": "text", "zstd": {"level": 5, "dictionary": True}}
    field = Field(entry, "c0")
    samples = [{field.name: f"Ünïcode {i} · {FILLER}"} for i in range(9)]
    out = build_and_check(tmp_path, Case([field], samples, 1 << 20))
    spec = read_manifest(out / "fastpack.json").schema[field.name]
    assert spec.zstd is not None
    assert spec.zstd.dictionary is not None
    assert (out / spec.zstd.dictionary.name).is_file()
