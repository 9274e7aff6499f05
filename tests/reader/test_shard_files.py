"""One shard-file layer, one rule: the map-style and the streaming reader, with either I/O method,
raise the same named error for a missing shard and for an empty or short one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import DatasetNotFoundError, TruncatedFileError
from fastpack.reader import Dataset, StreamingDataset
from fastpack.reader.shard_files import IoMethod

from .conftest import Built

Read = Callable[[Path, IoMethod], object]


def _map_style(root: Path, io: IoMethod) -> object:
    with Dataset(root, io=io) as ds:
        return [ds[i] for i in range(len(ds))]


def _streaming(root: Path, io: IoMethod) -> object:
    with StreamingDataset(root, io=io, shuffle=False) as ds:
        return list(ds)


READERS = pytest.mark.parametrize("read", [_map_style, _streaming], ids=["map-style", "streaming"])
IOS = pytest.mark.parametrize("io", ["mmap", "pread"])


@pytest.fixture
def root(build_dataset: Callable[..., Built]) -> Path:
    return build_dataset(shard_size=8_000).path


@READERS
@IOS
def test_a_missing_shard(root: Path, read: Read, io: IoMethod) -> None:
    (root / "shards" / "000001.tar").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"000001\.tar: shard 1 listed in .* not found"):
        read(root, io)


@READERS
@IOS
@pytest.mark.parametrize("size", [0, 700])
def test_an_empty_or_short_shard(root: Path, read: Read, io: IoMethod, size: int) -> None:
    shard = root / "shards" / "000001.tar"
    expected = shard.stat().st_size
    with shard.open("r+b") as f:
        f.truncate(size)
    message = rf"000001\.tar: shard 1 .*has {size} bytes, the manifest records {expected}"
    with pytest.raises(TruncatedFileError, match=message):
        read(root, io)
