from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import webdataset as wds
from fastpack.formats import (
    ShardFormatError,
    TruncatedFileError,
    UnsupportedVersionError,
    scan_members,
)
from fastpack.formats.tar_shard import TarShardWriter, member_header
from fastpack.formats.wds_index import format_wds_index, parse_wds_index
from hypothesis import given
from hypothesis import strategies as st

from ._samples import LABELS, PAYLOADS, write_shard


def test_members_are_plain_ustar_with_zero_mtime(tmp_path: Path) -> None:
    data, _ = write_shard()
    path = tmp_path / "s.tar"
    path.write_bytes(data)
    with tarfile.open(path) as tar:
        infos = tar.getmembers()
        assert [i.name for i in infos] == [
            f"{i:09d}.{ext}" for i in range(len(PAYLOADS)) for ext in ("jpg", "cls")
        ]
        for info in infos:
            assert (info.mtime, info.uid, info.gid, info.mode) == (0, 0, 0, 0o644)
            assert info.offset_data == info.offset + 512  # no PAX/GNU extended headers
            assert not info.pax_headers
        assert tar.extractfile(infos[2]).read() == PAYLOADS[1]  # type: ignore[union-attr]
    assert data[257:263] == b"ustar\x00"
    assert len(data) % 512 == 0
    assert data[-1024:] == bytes(1024)


def test_scan_members_matches_writer_locations(tmp_path: Path) -> None:
    data, locations = write_shard()
    path = tmp_path / "s.tar"
    path.write_bytes(data)
    assert list(scan_members(path)) == [m for sample in locations for m in sample]


def test_webdataset_reads_the_shard(tmp_path: Path) -> None:
    data, _ = write_shard()
    path = tmp_path / "s.tar"
    path.write_bytes(data)
    samples = list(wds.WebDataset(str(path), shardshuffle=False))
    assert [s["__key__"] for s in samples] == [f"{i:09d}" for i in range(len(PAYLOADS))]
    assert [s["jpg"] for s in samples] == list(PAYLOADS)
    assert [int(s["cls"]) for s in samples] == list(LABELS)


@pytest.mark.parametrize("key", ["a.b", "a b", "a/b", "", "tab\tkey"])
def test_bad_keys_are_refused(key: str) -> None:
    with pytest.raises(ShardFormatError, match="keys must be non-empty"):
        TarShardWriter(io.BytesIO()).add_sample(key, [("jpg", b"x")])


def test_long_names_and_bad_extensions_are_refused() -> None:
    with pytest.raises(ShardFormatError, match="over 99 bytes"):
        member_header("k" * 100 + ".jpg", 1)
    with pytest.raises(ShardFormatError, match="extension 'J PG'"):
        TarShardWriter(io.BytesIO()).add_sample("k", [("J PG", b"x")])


def test_truncated_shard_is_named(tmp_path: Path) -> None:
    data, _ = write_shard()
    path = tmp_path / "s.tar"
    path.write_bytes(data[:1500])
    with pytest.raises(TruncatedFileError, match=r"s\.tar"):
        list(scan_members(path))


def test_not_a_tar_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.tar"
    path.write_bytes(b"this is not a tar file" * 40)
    with pytest.raises(ShardFormatError, match=r"s\.tar: not a readable tar"):
        list(scan_members(path))


def test_wds_index_round_trip_and_errors() -> None:
    _, locations = write_shard()
    text = format_wds_index(locations)
    assert text.splitlines()[0] == f"v1.2 {len(PAYLOADS)}"
    assert text.splitlines()[1] == "jpg 512 9 000000000.jpg cls 1536 1 000000000.cls"
    assert parse_wds_index(text, "x.idx") == locations
    with pytest.raises(ShardFormatError, match=r"x\.idx: header announces 5 samples, found 3"):
        parse_wds_index(text.replace("v1.2 3", "v1.2 5"), "x.idx")
    with pytest.raises(ShardFormatError, match="line 2: bad offset"):
        parse_wds_index(text.replace("jpg 512 ", "jpg 513 ", 1), "x.idx")
    with pytest.raises(UnsupportedVersionError, match=r"index version 'v1\.1'"):
        parse_wds_index(text.replace("v1.2", "v1.1"), "x.idx")


@given(
    name=st.text(alphabet="abz09._-é€", min_size=1, max_size=33),
    size=st.one_of(st.integers(0, 8**11 - 1), st.sampled_from([0, 511, 512, 8**11 - 1])),
)
def test_member_header_is_tarfiles_header(name: str, size: int) -> None:
    """The template header is byte for byte what tarfile writes for the same member."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    expected = info.tobuf(format=tarfile.USTAR_FORMAT, encoding="utf-8", errors="strict")
    assert member_header(name, size) == expected


def test_member_header_of_an_oversized_member_is_refused() -> None:
    with pytest.raises(ShardFormatError, match=r"'a\.jpg' of 8589934592 bytes: a USTAR member"):
        member_header("a.jpg", 8**11)


def _tarfile_sample(key: str, members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    tar = tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT)  # noqa: SIM115 -- left open: closing writes the end blocks
    for ext, data in members:
        info = tarfile.TarInfo(f"{key}.{ext}")
        info.size, info.mtime, info.mode = len(data), 0, 0o644
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()  # the members only: the tar is not closed, so no end-of-archive blocks


@given(
    key=st.text(alphabet="abz09_-é€", min_size=1, max_size=20),
    members=st.lists(
        st.tuples(
            st.sampled_from(["jpg", "cls", "txt", "labels.json", "json"]),
            st.one_of(st.binary(max_size=600), st.integers(4000, 9000).map(bytes)),
        ),
        max_size=6,
    ),
)
def test_a_sample_is_what_tarfile_writes(key: str, members: list[tuple[str, bytes]]) -> None:
    """Small members joined into one write, big ones written apart: the bytes and offsets are
    still tarfile's, member after member."""
    out = io.BytesIO()
    writer = TarShardWriter(out)
    writer.add_sample("k0", [("jpg", b"x" * 700)])  # a sample before, so offsets start past 0
    locations = writer.add_sample(key, members)
    size = writer.finish()
    expected = _tarfile_sample("k0", [("jpg", b"x" * 700)]) + _tarfile_sample(key, members)
    assert out.getvalue() == expected + bytes(1024)
    assert size == len(expected) + 1024
    for (ext, data), at in zip(members, locations, strict=True):
        assert at.name == f"{key}.{ext}"
        assert expected[at.data_offset : at.data_offset + at.size] == data
        assert at.header_offset == at.data_offset - 512
