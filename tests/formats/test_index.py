from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import (
    BadMagicError,
    CorruptIndexError,
    DatasetNotFoundError,
    FastpackError,
    Index,
    IndexWriter,
    OffsetOutOfRangeError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from fastpack.formats.index_layout import (
    ENTRY_SIZE,
    HEADER_SIZE,
    INDEX_MAGIC,
    section_table,
    table_size,
)
from fastpack.formats.string_table import unpack_strings

from ._samples import FIELDS, LABELS, PAYLOADS, SOURCES, index_part, write_index, write_shard


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    _, locations = write_shard()
    path = tmp_path / "index.fpx"
    write_index(path, locations)
    return path


def test_round_trip(index_path: Path) -> None:
    data, locations = write_shard()
    ix = Index(index_path)
    assert (len(ix), ix.num_shards, ix.fields) == (len(PAYLOADS), 1, FIELDS)
    assert ix.label.tolist() == list(LABELS)
    assert [ix.source(i) for i in range(len(ix))] == list(SOURCES)
    assert [ix.key(i) for i in range(len(ix))] == [f"{i:09d}" for i in range(len(ix))]
    for i, payload in enumerate(PAYLOADS):
        shard, offset, size = ix.locate(i, "jpg", len(data))
        assert (shard, data[offset : offset + size]) == (0, payload)
        assert int(ix.offsets("jpg")[i]) == locations[i][0].data_offset
    assert ix.label.dtype == np.dtype("<i8")
    assert ix.offsets("jpg").dtype == np.dtype("<u8")


def test_file_layout(index_path: Path) -> None:
    raw = index_path.read_bytes()
    assert raw[:8] == INDEX_MAGIC == b"\x89FPX\r\n\x1a\n"
    version, header_size, n, shards, sections, file_size = struct.unpack_from("<IIQIIQ", raw, 8)
    assert (version, header_size, n, shards, file_size) == (1, 64, 3, 1, len(raw))
    for s in range(sections):
        name, _dtype, offset, _count = struct.unpack_from("<24s8sQQ", raw, HEADER_SIZE + s * 48)
        assert offset % 64 == 0
        assert name.rstrip(b"\0").decode() in {
            "shard",
            "label",
            "key.offsets",
            "key.blob",
            "source.offsets",
            "source.blob",
            *(f"{f}.{c}" for f in FIELDS for c in ("offset", "size", "crc32")),
        }


def test_section_table_locates_every_section(index_path: Path) -> None:
    raw = index_path.read_bytes()
    assert table_size(raw[:HEADER_SIZE]) == HEADER_SIZE + ENTRY_SIZE * 12
    sections = section_table(raw[: table_size(raw[:HEADER_SIZE])])
    ix = Index(index_path)
    assert sections.keys() == {*ix._sections}
    for name, section in sections.items():
        start, end = section.span(0, section.elements)
        found = np.frombuffer(raw[start:end], section.dtype)
        np.testing.assert_array_equal(found, ix._sections[name])
    assert section_table(raw[:HEADER_SIZE]) == {}  # a head without its table lists nothing


def test_writer_keeps_offsets_across_parts(tmp_path: Path) -> None:
    _, locations = write_shard()
    parts = [index_part(locations, shard=0), index_part(locations, shard=1)]
    path = tmp_path / "index.fpx"
    with IndexWriter(
        path=path,
        num_samples=6,
        num_shards=2,
        fields=FIELDS,
        key_blob_size=2 * len(parts[0].key_blob),
        source_blob_size=2 * len(parts[0].source_blob),
    ) as writer:
        for part in parts:
            writer.append(part)
    ix = Index(path)
    assert ix.shard.tolist() == [0, 0, 0, 1, 1, 1]
    assert [ix.source(i) for i in range(6)] == list(SOURCES) * 2
    assert unpack_strings(ix._key_blob, ix._key_offsets)[3] == "000000000"


def test_writer_refuses_wrong_totals_and_leaves_nothing(tmp_path: Path) -> None:
    _, locations = write_shard()
    part = index_part(locations)
    path = tmp_path / "index.fpx"
    with (
        pytest.raises(CorruptIndexError, match=r"wrote 3 samples.*announced 4"),
        IndexWriter(
            path=path,
            num_samples=4,
            num_shards=1,
            fields=FIELDS,
            key_blob_size=len(part.key_blob),
            source_blob_size=len(part.source_blob),
        ) as writer,
    ):
        writer.append(part)
    assert not path.exists()
    assert not list(tmp_path.iterdir())


def _patch(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))


def test_bad_magic(index_path: Path) -> None:
    _patch(index_path, 0, b"GARBAGE!")
    with pytest.raises(BadMagicError, match=r"index\.fpx: bad magic b'GARBAGE!'"):
        Index(index_path)


def test_unknown_version(index_path: Path) -> None:
    _patch(index_path, 8, struct.pack("<I", 7))
    with pytest.raises(
        UnsupportedVersionError, match=r"index version 7, this reader supports \(1, 2, 3\)"
    ):
        Index(index_path)


@pytest.mark.parametrize("keep", [0, 10, 63, 200])
def test_truncated_index(index_path: Path, keep: int) -> None:
    index_path.write_bytes(index_path.read_bytes()[:keep])
    with pytest.raises(TruncatedFileError, match=r"index\.fpx: \d+ bytes"):
        Index(index_path)


def test_section_past_the_end(index_path: Path) -> None:
    # The first section's offset points far past the end; file_size in the header stays honest.
    _patch(index_path, HEADER_SIZE + 32, struct.pack("<Q", 1 << 40))
    with pytest.raises(TruncatedFileError, match="section 'shard' ends at byte"):
        Index(index_path)


def test_wrong_section_dtype(index_path: Path) -> None:
    _patch(index_path, HEADER_SIZE + 1 * ENTRY_SIZE + 24, b"<u4\0\0\0\0\0")
    with pytest.raises(CorruptIndexError, match="section 'label' has dtype <u4, expected <i8"):
        Index(index_path)


def test_missing_section(index_path: Path) -> None:
    _patch(index_path, HEADER_SIZE, b"renamed".ljust(24, b"\0"))
    with pytest.raises(CorruptIndexError, match="required section 'shard' is missing"):
        Index(index_path)


def test_offset_past_the_shard_end(index_path: Path) -> None:
    ix = Index(index_path)
    with pytest.raises(OffsetOutOfRangeError, match=r"sample 2 field 'jpg' spans bytes") as e:
        ix.locate(2, "jpg", shard_size=1000)
    assert not isinstance(e.value, IndexError)  # the sequence protocol would stop iteration
    assert isinstance(e.value, FastpackError)
    assert "index.fpx" in str(e.value)
    assert "shard 0, which has 1000 bytes" in str(e.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"nope\.fpx: index file not found"):
        Index(tmp_path / "nope.fpx")


def test_sample_out_of_range(index_path: Path) -> None:
    with pytest.raises(IndexError, match=r"sample 3 out of range \[0, 3\)"):
        Index(index_path).key(3)


def _entry_at(path: Path, name: str) -> int:
    """Byte offset of the section table entry named `name`."""
    raw = path.read_bytes()
    (sections,) = struct.unpack_from("<I", raw, 28)
    for s in range(sections):
        at = HEADER_SIZE + s * ENTRY_SIZE
        if raw[at : at + 24].rstrip(b"\0") == name.encode():
            return at
    raise AssertionError(f"no section {name!r}")


def _section_at(path: Path, name: str) -> int:
    """Byte offset of the first element of section `name`."""
    (offset,) = struct.unpack_from("<Q", path.read_bytes(), _entry_at(path, name) + 32)
    return int(offset)


def test_subarray_dtype_is_corrupt_not_a_numpy_error(index_path: Path) -> None:
    # "(2,)u1" parses as a numpy dtype; viewing the blob with it raised a bare ValueError.
    _patch(index_path, _entry_at(index_path, "key.blob") + 24, b"(2,)u1\0\0")
    with pytest.raises(
        CorruptIndexError,
        match=r"index\.fpx: section 'key\.blob' has dtype '\(2,\)u1', expected \|u1$",
    ):
        Index(index_path)


@pytest.mark.parametrize(
    "dtype", [b"V0", b"O", b">u4", b"u1", b"<f8", b"S8", b"<u4\0x", b"\xff", b"", b"<u8 "]
)
def test_dtype_outside_spec(index_path: Path, dtype: bytes) -> None:
    # "u1" and "<u8 " mean |u1 and <u8 to numpy, but SPEC allows exactly four strings.
    _patch(index_path, _entry_at(index_path, "key.blob") + 24, dtype.ljust(8, b"\0"))
    with pytest.raises(
        CorruptIndexError, match=r"index\.fpx: section 'key\.blob' has dtype '.*', expected \|u1$"
    ):
        Index(index_path)


def test_huge_blob_count_lies_past_the_end(index_path: Path) -> None:
    at = _entry_at(index_path, "key.blob")
    _patch(index_path, at + 40, struct.pack("<Q", 2**64 - 1))
    end = _section_at(index_path, "key.blob") + 2**64 - 1  # exact: no wrap-around
    with pytest.raises(
        TruncatedFileError, match=rf"section 'key\.blob' ends at byte {end}, file has \d+"
    ):
        Index(index_path)


@pytest.mark.parametrize("count", [0, 2, 4, 2**61, 2**64 - 1])
def test_count_other_than_spec(index_path: Path, count: int) -> None:
    _patch(index_path, _entry_at(index_path, "label") + 40, struct.pack("<Q", count))
    with pytest.raises(
        CorruptIndexError, match=rf"section 'label' has {count} elements, expected 3"
    ):
        Index(index_path)


def test_huge_num_sections_fails_on_the_table_size(index_path: Path) -> None:
    # 2**32 - 1 entries would be a 206 GB table: refused before a single entry is read.
    _patch(index_path, 28, struct.pack("<I", 2**32 - 1))
    size = index_path.stat().st_size
    with pytest.raises(
        TruncatedFileError,
        match=rf"section table of 4294967295 entries needs {64 + 48 * (2**32 - 1)} bytes, "
        rf"file has {size}",
    ):
        Index(index_path)


@pytest.mark.parametrize("n", [2**64 - 1, 2**40, 4])
def test_num_samples_against_the_file(index_path: Path, n: int) -> None:
    _patch(index_path, 16, struct.pack("<Q", n))
    with pytest.raises(CorruptIndexError, match=rf"index\.fpx: .*\b{n}\b"):
        Index(index_path)


@pytest.mark.parametrize(
    ("at", "data", "message"),
    [
        (12, struct.pack("<I", 65), r"header_size 65, expected 64"),
        (24, struct.pack("<I", 0), r"header says 3 samples in 0 shards"),
        (40, b"\x01", r"reserved header bytes 40-63 are 01000*, expected zeros"),
    ],
)
def test_corrupt_header_fields(index_path: Path, at: int, data: bytes, message: str) -> None:
    _patch(index_path, at, data)
    with pytest.raises(CorruptIndexError, match=rf"index\.fpx: {message}"):
        Index(index_path)


def test_file_size_against_the_file(index_path: Path) -> None:
    size = index_path.stat().st_size
    with index_path.open("ab") as f:
        f.write(b"\0" * 64)
    with pytest.raises(
        CorruptIndexError, match=rf"{size + 64} bytes, the header's file_size is {size}"
    ):
        Index(index_path)
    _patch(index_path, 32, struct.pack("<Q", 2**64 - 1))
    with pytest.raises(TruncatedFileError, match=rf"{size + 64} bytes, the header promises"):
        Index(index_path)


@pytest.mark.parametrize(
    ("name", "found"),
    [(b"sh\0rd", r"b'sh\\x00rd\\x00"), (b"\xe9tiquette", r"b'\\xe9tiquette"), (b" ", "b' ")],
)
def test_malformed_section_name(index_path: Path, name: bytes, found: str) -> None:
    _patch(index_path, HEADER_SIZE, name.ljust(24, b"\0"))
    with pytest.raises(
        CorruptIndexError, match=rf"section table entry 0 has name {found}.*printable ASCII"
    ):
        Index(index_path)


def test_duplicate_section(index_path: Path) -> None:
    _patch(index_path, _entry_at(index_path, "cls.size"), b"jpg.size".ljust(24, b"\0"))
    with pytest.raises(CorruptIndexError, match=r"section 'jpg\.size' appears twice \(entries 7"):
        Index(index_path)


def test_section_that_spec_does_not_define(tmp_path: Path) -> None:
    _, locations = write_shard()
    part = index_part(locations)
    extra = dataclasses.replace(
        part,
        offsets={**part.offsets, "txt": part.offsets["cls"]},
        sizes={**part.sizes, "txt": part.sizes["cls"]},
        crc32={**part.crc32, "txt": part.crc32["cls"]},
    )
    path = tmp_path / "index.fpx"
    with IndexWriter(
        path=path,
        num_samples=3,
        num_shards=1,
        fields=(*FIELDS, "txt"),
        key_blob_size=len(part.key_blob),
        source_blob_size=len(part.source_blob),
    ) as writer:
        writer.append(extra)
    assert Index(path).fields == (*FIELDS, "txt")
    # Without `txt.offset` there is no field `txt`, so `txt.size` and the rest are strangers.
    _patch(path, _entry_at(path, "txt.offset"), b"txt.offsez".ljust(24, b"\0"))
    with pytest.raises(
        CorruptIndexError,
        match=r"section 'txt\.offsez' is not a version 1 section \(fields \('jpg', 'cls'\)\)",
    ):
        Index(path)


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        (65, r"section 'label' starts at byte 65, not a multiple of 64"),
        (0, r"section 'label' starts at byte 0, inside the header and section table"),
        (None, r"section 'label' starts at byte \d+, inside section 'shard'"),
    ],
)
def test_misplaced_section(index_path: Path, offset: int | None, message: str) -> None:
    if offset is None:
        offset = _section_at(index_path, "shard")
    _patch(index_path, _entry_at(index_path, "label") + 32, struct.pack("<Q", offset))
    with pytest.raises(CorruptIndexError, match=rf"index\.fpx: {message}"):
        Index(index_path)


def test_string_offsets_checked_at_open_in_o1(index_path: Path) -> None:
    _patch(index_path, _section_at(index_path, "key.offsets"), struct.pack("<Q", 1))
    with pytest.raises(
        CorruptIndexError, match=r"section 'key\.offsets' runs from 1 to 27, expected 0 to 27"
    ):
        Index(index_path)


@pytest.mark.parametrize(
    ("values", "sample", "found"),
    [((20, 10), 1, r"\[20, 10\)"), ((2**64 - 1, 2**64 - 1), 0, r"\[0, 18446744073709551615\)")],
)
def test_string_offsets_checked_per_access(
    index_path: Path, values: tuple[int, int], sample: int, found: str
) -> None:
    # Not at open, which would scan N offsets: key(i) checks the two it reads.
    _patch(index_path, _section_at(index_path, "key.offsets") + 8, struct.pack("<2Q", *values))
    ix = Index(index_path)
    assert ix.source(sample) == SOURCES[sample]
    with pytest.raises(
        CorruptIndexError,
        match=rf"index\.fpx: section 'key\.offsets' gives sample {sample} bytes {found}, "
        r"expected a range inside the 27 bytes of 'key\.blob'",
    ):
        ix.key(sample)


def test_string_that_is_not_utf8(index_path: Path) -> None:
    _patch(index_path, _section_at(index_path, "source.blob") + 1, b"\xff")
    ix = Index(index_path)
    with pytest.raises(
        CorruptIndexError,
        match=r"section 'source\.blob' bytes \[0, 10\) of sample 0 are not UTF-8 \(invalid "
        r"start byte at byte 1\)",
    ):
        ix.source(0)
    assert ix.source(1) == SOURCES[1]


def test_shard_past_the_header_count(index_path: Path) -> None:
    _patch(index_path, _section_at(index_path, "shard") + 4, struct.pack("<I", 1))
    ix = Index(index_path)
    assert ix.locate(0, "jpg", 1 << 20)[0] == 0
    with pytest.raises(
        CorruptIndexError, match=r"sample 1 is in shard 1, the header counts 1 shards"
    ):
        ix.locate(1, "jpg", 1 << 20)


def test_empty_index(tmp_path: Path) -> None:
    # Empty sections sit at the end of the file: offset == file_size is inside it.
    path = tmp_path / "index.fpx"
    IndexWriter(
        path=path, num_samples=0, num_shards=0, fields=FIELDS, key_blob_size=0, source_blob_size=0
    ).close()
    ix = Index(path)
    assert (len(ix), ix.fields, ix.label.tolist(), len(ix._key_blob)) == (0, FIELDS, [], 0)
    assert _section_at(path, "shard") == path.stat().st_size - 128


def test_string_table_reads_every_string_at_once(index_path: Path) -> None:
    blob, offsets = Index(index_path).string_table("source")
    assert unpack_strings(blob, offsets) == list(SOURCES)
    keys = unpack_strings(*Index(index_path).string_table("key"))
    assert keys == [f"{i:09d}" for i in range(len(SOURCES))]
    with pytest.raises(KeyError, match="no string table 'label'"):
        Index(index_path).string_table("label")


def test_string_table_refuses_offsets_that_go_back(index_path: Path) -> None:
    at = _section_at(index_path, "source.offsets") + 8  # entry 1: the end of sample 0
    _patch(index_path, at, struct.pack("<Q", 2**40))
    with pytest.raises(CorruptIndexError, match=r"'source.offsets' gives sample 1 bytes \["):
        Index(index_path).string_table("source")
