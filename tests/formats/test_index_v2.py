"""Version 2 of the index: fields numbered `f0, f1, ...` in schema order, absent members of
optional fields, and the hostile indexes that break those rules. Version 1 reads as before."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import (
    ABSENT,
    AbsentFieldError,
    CorruptIndexError,
    DatasetFiles,
    Index,
    IndexPart,
    IndexWriter,
    OffsetOutOfRangeError,
    Schema,
    UnsupportedVersionError,
)
from fastpack.formats.index_layout import ENTRY_SIZE, HEADER_SIZE
from fastpack.formats.string_table import pack_strings

from ._v2 import spec, write_v2_dataset

FIELDS = ("jpg", "cls", "txt")
N = 4
TXT_PRESENT = (True, False, True, False)
GOLDEN_V1 = Path(__file__).parent / "golden" / "index.fpx"


def _part() -> IndexPart:
    keys, key_offsets = pack_strings(f"{i:09d}" for i in range(N))
    sources, source_offsets = pack_strings(f"s{i}" for i in range(N))
    offsets = {f: np.arange(N, dtype="<u8") * 4096 + 512 * (k + 1) for k, f in enumerate(FIELDS)}
    sizes = {f: np.full(N, 10 + k, "<u8") for k, f in enumerate(FIELDS)}
    crcs = {f: np.full(N, 100 + k, "<u4") for k, f in enumerate(FIELDS)}
    absent = ~np.array(TXT_PRESENT)
    offsets["txt"][absent], sizes["txt"][absent], crcs["txt"][absent] = ABSENT, 0, 0
    return IndexPart(
        shard=0,
        labels=np.arange(N, dtype="<i8"),
        key_blob=keys,
        key_offsets=key_offsets,
        source_blob=sources,
        source_offsets=source_offsets,
        offsets=offsets,
        sizes=sizes,
        crc32=crcs,
    )


def write_v2_index(path: Path, version: int = 2) -> Path:
    part = _part()
    with IndexWriter(
        path=path,
        num_samples=N,
        num_shards=1,
        fields=FIELDS,
        key_blob_size=len(part.key_blob),
        source_blob_size=len(part.source_blob),
        version=version,
    ) as writer:
        writer.append(part)
    return path


@pytest.fixture
def v2_index(tmp_path: Path) -> Path:
    return write_v2_index(tmp_path / "index.fpx")


def _section_names(raw: bytes) -> list[str]:
    (count,) = struct.unpack_from("<I", raw, 28)
    return [
        raw[HEADER_SIZE + k * ENTRY_SIZE : HEADER_SIZE + k * ENTRY_SIZE + 24].rstrip(b"\0").decode()
        for k in range(count)
    ]


def _rename(path: Path, renames: dict[str, str]) -> None:
    """Rename sections in the table of the index at `path`, in place."""
    raw = bytearray(path.read_bytes())
    for k, name in enumerate(_section_names(bytes(raw))):
        if name in renames:
            at = HEADER_SIZE + k * ENTRY_SIZE
            raw[at : at + 24] = renames[name].encode().ljust(24, b"\0")
    path.write_bytes(bytes(raw))


def _set_version(path: Path, version: int) -> None:
    raw = bytearray(path.read_bytes())
    struct.pack_into("<I", raw, 8, version)
    path.write_bytes(bytes(raw))


def test_fields_are_numbered_in_schema_order(v2_index: Path) -> None:
    names = _section_names(v2_index.read_bytes())
    assert [n for n in names if n.endswith(".offset")] == ["f0.offset", "f1.offset", "f2.offset"]
    assert not any(n.startswith(FIELDS) for n in names)
    ix = Index(v2_index, FIELDS)
    assert (ix.version, ix.fields) == (2, FIELDS)
    assert Index(v2_index).fields == ("f0", "f1", "f2")
    assert ix.sizes("cls").tolist() == [11] * N
    assert ix.crc32("jpg").tolist() == [100] * N


def test_absent_members(v2_index: Path) -> None:
    ix = Index(v2_index, FIELDS)
    assert ix.present("txt").tolist() == list(TXT_PRESENT)
    assert ix.present("jpg").all()
    assert ix.locate(0, "txt", 1 << 20) == (0, 512 * 3, 12)
    with pytest.raises(AbsentFieldError, match=r"index.fpx: sample 1 has no 'txt' member") as e:
        ix.locate(1, "txt", 1 << 20)
    assert isinstance(e.value, LookupError)
    assert not isinstance(e.value, IndexError)
    assert int(ix.offsets("txt")[3]) == ABSENT


def test_field_count_must_match_the_schema(v2_index: Path) -> None:
    with pytest.raises(
        CorruptIndexError, match=r"index.fpx: 3 fields in the index, the schema has 2 \(jpg, cls\)"
    ):
        Index(v2_index, ("jpg", "cls"))
    with pytest.raises(CorruptIndexError, match="3 fields in the index, the schema has 4"):
        Index(v2_index, (*FIELDS, "json"))


def test_a_field_section_without_its_predecessor(v2_index: Path) -> None:
    _rename(v2_index, {"f1.offset": "f3.offset", "f1.size": "f3.size", "f1.crc32": "f3.crc32"})
    with pytest.raises(CorruptIndexError, match=r"required section 'f1\.offset' is missing"):
        Index(v2_index, FIELDS)


def test_a_field_missing_one_section(v2_index: Path) -> None:
    _rename(v2_index, {"f2.crc32": "f3.crc32"})
    with pytest.raises(CorruptIndexError, match=r"required section 'f2\.crc32' is missing"):
        Index(v2_index, FIELDS)


def test_sections_named_after_fields_are_version_1(v2_index: Path) -> None:
    _rename(
        v2_index,
        {
            f"f{k}.{s}": f"{f}.{s}"
            for k, f in enumerate(FIELDS)
            for s in ("offset", "size", "crc32")
        },
    )
    with pytest.raises(CorruptIndexError, match=r"required section 'f0\.offset' is missing"):
        Index(v2_index, FIELDS)
    _set_version(v2_index, 1)
    assert Index(v2_index, ("ignored",)).fields == FIELDS  # version 1 names its own fields


def test_a_renamed_field_section(v2_index: Path) -> None:
    _rename(v2_index, {"f2.crc32": "f2.sha256"})
    with pytest.raises(CorruptIndexError, match=r"required section 'f2\.crc32' is missing"):
        Index(v2_index, FIELDS)
    _rename(v2_index, {"f2.sha256": "f2.crc32", "label": "f2.label"})
    with pytest.raises(CorruptIndexError, match=r"required section 'label' is missing"):
        Index(v2_index, FIELDS)


def test_version_1_reads_as_before(tmp_path: Path) -> None:
    ix = Index(GOLDEN_V1, ("x", "y", "z"))  # a version-1 index names its own fields
    assert (ix.version, ix.fields) == (1, ("jpg", "cls"))
    path = write_v2_index(tmp_path / "v1.fpx", version=1)
    assert [n for n in _section_names(path.read_bytes()) if n.endswith(".offset")] == [
        "jpg.offset",
        "cls.offset",
        "txt.offset",
    ]
    v1 = Index(path)
    assert v1.fields == FIELDS
    with pytest.raises(OffsetOutOfRangeError, match=r"sample 1 field 'txt' spans bytes"):
        v1.locate(1, "txt", 1 << 20)  # no absent members in version 1: just a bad offset


def test_unsupported_versions(v2_index: Path) -> None:
    _set_version(v2_index, 4)
    with pytest.raises(UnsupportedVersionError, match=r"index version 4, this reader supports \(1"):
        Index(v2_index, FIELDS)
    with pytest.raises(ValueError, match="cannot write index version 4"):
        IndexWriter(
            path=v2_index,
            num_samples=0,
            num_shards=0,
            fields=FIELDS,
            key_blob_size=0,
            source_blob_size=0,
            version=4,
        )


def test_dataset_files_check_the_index_against_the_schema(tmp_path: Path) -> None:
    schema = Schema((spec("jpg", "jpeg"), spec("cls", "class"), spec("txt", "text", optional=True)))
    samples = [{"jpg": b"\xff\xd8", "cls": i, **({"txt": "t"} if i % 2 else {})} for i in range(5)]
    write_v2_dataset(tmp_path / "ds", schema, samples)
    assert DatasetFiles(tmp_path / "ds").index.present("txt").tolist() == [
        False,
        True,
        False,
        True,
        False,
    ]
    two = Schema((spec("jpg", "jpeg"), spec("txt", "text", optional=True)))
    write_v2_dataset(tmp_path / "two", two, samples)
    index = tmp_path / "ds" / "index.fpx"
    index.write_bytes((tmp_path / "two" / "index.fpx").read_bytes())
    with pytest.raises(
        CorruptIndexError, match=r"2 fields in the index, the schema has 3 \(jpg, cls, txt\)"
    ):
        DatasetFiles(tmp_path / "ds")
    write_v2_dataset(tmp_path / "ds", schema, samples)
    _set_version(index, 1)
    with pytest.raises(
        CorruptIndexError, match=r"fields \('f0', 'f1', 'f2'\), the manifest lists \('jpg', 'cls'"
    ):
        DatasetFiles(tmp_path / "ds")
