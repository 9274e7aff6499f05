from __future__ import annotations

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
    unpack_strings,
)
from fastpack.formats.index import ENTRY_SIZE, HEADER_SIZE, MAGIC

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
    assert raw[:8] == MAGIC == b"\x89FPX\r\n\x1a\n"
    version, header_size, n, shards, sections, file_size = struct.unpack_from("<IIQIIQ", raw, 8)
    assert (version, header_size, n, shards, file_size) == (1, 64, 3, 1, len(raw))
    for s in range(sections):
        name, _dtype, offset, _count = struct.unpack_from("<24s8sQQ", raw, HEADER_SIZE + s * 48)
        assert offset % 64 == 0
        assert name.rstrip(b"\0").decode() in {
            "shard", "label", "key.offsets", "key.blob", "source.offsets", "source.blob",
            *(f"{f}.{c}" for f in FIELDS for c in ("offset", "size", "crc32")),
        }  # fmt: skip


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
        UnsupportedVersionError, match=r"index version 7, this reader supports \(1,\)"
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
