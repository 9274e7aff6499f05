"""One shard-file layer, one rule: the map-style and the streaming reader, with either I/O method,
raise the same named error for a missing shard and for an empty or short one."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import DatasetNotFoundError, TruncatedFileError
from fastpack.reader import Dataset, StreamingDataset
from fastpack.reader.shard_files import IoMethod, PreadShard

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


def _failing_close(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """`os.close` as on a network mount that went away: the descriptor is released, and the call
    reports ENOTCONN. Returns the descriptors it was called with."""
    real_close, calls = os.close, []

    def close(fd: int) -> None:
        calls.append(fd)
        real_close(fd)
        raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")

    monkeypatch.setattr(os, "close", close)
    return calls


def test_a_pread_shard_whose_close_fails_is_closed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "shard.tar"
    path.write_bytes(b"x" * 100)
    shard = PreadShard(path, 100, "shard 0")
    assert shard.read(10, 5) == b"xxxxx"
    calls = _failing_close(monkeypatch)
    shard.close()  # no error: a read-only descriptor loses nothing
    shard.close()
    del shard
    # Once: a second close of the same number could close another file that reuses it.
    assert len(calls) == 1


def test_closing_a_dataset_closes_every_shard_when_closes_fail(
    build_dataset: Callable[..., Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    built = build_dataset(shard_size=8_000)
    shards = sorted((built.path / "shards").glob("*.tar"))
    assert len(shards) > 1
    ds = Dataset(built.path, io="pread")
    for i in range(len(ds)):
        ds[i]
    calls = _failing_close(monkeypatch)
    ds.close()
    monkeypatch.undo()
    assert len(calls) >= len(shards)
    assert not _open_descriptors_under(built.path)


def _open_descriptors_under(root: Path) -> list[str]:
    fds = Path("/proc/self/fd")
    targets = []
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            targets.append(os.readlink(fd))
    return [t for t in targets if t.startswith(str(root))]
