"""Damaged datasets: each gives a named error whose message names the file at fault."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import (
    BadMagicError,
    CorruptIndexError,
    DatasetNotFoundError,
    Index,
    OffsetOutOfRangeError,
    ShardFormatError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from fastpack.reader import Dataset, RandomResizedCrop

from ..conftest import Built, refresh_manifest, section


def last_sample_of(ds: Dataset, shard: int) -> int:
    return int(np.flatnonzero(Index(ds.path / "index.fpx").shard == shard)[-1])


@pytest.fixture
def built(build_dataset: Callable[..., Built]) -> Path:
    path = build_dataset().path
    if len(Dataset(path).manifest.shards) < 2:
        raise RuntimeError("the hostile tests need a dataset of several shards")
    return path


def test_truncated_shard(built: Path) -> None:
    shard = built / "shards" / "000001.tar"
    size = shard.stat().st_size
    os.truncate(shard, size // 2)
    ds = Dataset(built)
    ds[0]  # shard 0 is intact
    i = last_sample_of(ds, 1)
    message = (
        rf"000001.tar: shard 1 listed in \S+fastpack.json has {size // 2} bytes, "
        rf"the manifest records {size}"
    )
    with pytest.raises(TruncatedFileError, match=message):
        ds[i]
    with pytest.raises(TruncatedFileError, match=message):
        ds.__getitems__([0, i])


def test_truncated_shard_with_matching_manifest(built: Path) -> None:
    """A shard cut short and a manifest that agrees: the index offsets point past the end."""
    shard = built / "shards" / "000001.tar"
    os.truncate(shard, 1024)
    refresh_manifest(built)
    ds = Dataset(built, transform=RandomResizedCrop(8))
    i = last_sample_of(ds, 1)
    with pytest.raises(
        OffsetOutOfRangeError,
        match=rf"index.fpx: sample {i} field 'jpg' spans bytes \[\d+, \d+\) of shard 1, "
        rf"which has 1024 bytes \(.*000001.tar\)",
    ):
        ds[i]


def test_offset_past_shard_end(built: Path) -> None:
    size = (built / "shards" / "000000.tar").stat().st_size
    offsets = section(built, "jpg.offset")
    offsets[1] = size - 100
    offsets.flush()
    del offsets
    ds = Dataset(built)
    ds[0]
    with pytest.raises(
        OffsetOutOfRangeError,
        match=rf"sample 1 field 'jpg' spans bytes \[{size - 100}, \d+\) of shard 0, "
        rf"which has {size} bytes",
    ) as caught:
        ds.read_bytes(1)
    assert "000000.tar" in str(caught.value)


def test_missing_shard(built: Path) -> None:
    (built / "shards" / "000001.tar").unlink()
    ds = Dataset(built)
    ds[0]
    with pytest.raises(DatasetNotFoundError, match=r"000001.tar: shard 1 listed in .* not found"):
        ds[last_sample_of(ds, 1)]


def test_index_bad_magic(built: Path) -> None:
    with (built / "index.fpx").open("r+b") as f:
        f.write(b"\x89FPY")
    with pytest.raises(BadMagicError, match=r"index.fpx: bad magic"):
        Dataset(built)


def test_index_bad_version(built: Path) -> None:
    with (built / "index.fpx").open("r+b") as f:
        f.seek(8)
        f.write(struct.pack("<I", 7))
    with pytest.raises(UnsupportedVersionError, match=r"index.fpx: index version 7, .*\(1, 2, 3\)"):
        Dataset(built)


def test_index_truncated(built: Path) -> None:
    os.truncate(built / "index.fpx", 40)
    with pytest.raises(TruncatedFileError, match=r"index.fpx: 40 bytes, shorter than"):
        Dataset(built)


def test_index_names_a_shard_the_manifest_lacks(built: Path) -> None:
    column = section(built, "shard")
    column[-1] = 9
    column.flush()
    del column
    ds = Dataset(built)
    with pytest.raises(
        CorruptIndexError, match=rf"index.fpx: sample {len(ds) - 1} is in shard 9, the manifest"
    ):
        ds[len(ds) - 1]


def test_payload_that_does_not_decode(built: Path) -> None:
    index = Index(built / "index.fpx")
    shard, offset, size = index.locate(2, "jpg", 1 << 40)
    with (built / f"shards/{shard:06d}.tar").open("r+b") as f:
        f.seek(offset + size // 2)
        f.write(b"\xff\xd9")  # an end-of-image marker in the middle of the scan
    for reader in (Dataset(built), Dataset(built, transform=RandomResizedCrop(16))):
        with pytest.raises(
            ShardFormatError,
            match=rf"{shard:06d}.tar: sample 2 \(key {index.key(2)}\) field 'jpg' at offset "
            rf"{offset} "
            r"does not decode: .*premature end",
        ):
            reader[2]


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda size: (0, b"\x00\x00"), r"not a JPEG: it starts with"),  # the header: planned
        (lambda size: (size // 2, b"\xff\xd9"), r".*premature end"),  # the scan: decoded
    ],
)
def test_a_batch_names_the_sample_that_does_not_decode(
    built: Path, damage: Callable[[int], tuple[int, bytes]], error: str
) -> None:
    index = Index(built / "index.fpx")
    shard, offset, size = index.locate(2, "jpg", 1 << 40)
    at, data = damage(size)
    with (built / f"shards/{shard:06d}.tar").open("r+b") as f:
        f.seek(offset + at)
        f.write(data)
    reader = Dataset(built, transform=RandomResizedCrop(16))
    with pytest.raises(
        ShardFormatError,
        match=rf"{shard:06d}.tar: sample 2 \(key {index.key(2)}\) field 'jpg' at offset {offset} "
        rf"does not decode: {error}",
    ):
        reader.__getitems__([0, 1, 2, 3])


def test_missing_manifest(built: Path) -> None:
    (built / "fastpack.json").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"fastpack\.json: no manifest"):
        Dataset(built)
