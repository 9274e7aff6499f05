"""`copy_file`: a whole file copied in parallel parts, checked for size, renamed when complete."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastpack.formats import DatasetNotFoundError, TruncatedFileError
from fastpack.storage import RetryPolicy, Transfer
from fastpack.storage.copy import copy_file


def test_parts_are_copied_at_their_offsets(tmp_path: Path) -> None:
    source = tmp_path / "a.tar"
    data = os.urandom(3 * 65536 + 123)
    source.write_bytes(data + b"written after the manifest")
    dest = tmp_path / "cache" / "a.tar"
    dest.parent.mkdir()
    copy_file(source, dest, size=len(data), transfer=Transfer(part_bytes=65536, threads=3))
    assert dest.read_bytes() == data
    assert [p.name for p in dest.parent.iterdir()] == ["a.tar"]


def test_a_missing_or_short_source_is_named_and_leaves_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "out.tar"
    with pytest.raises(DatasetNotFoundError, match=r"nowhere\.tar: not found"):
        copy_file(tmp_path / "nowhere.tar", dest, size=10)
    short = tmp_path / "short.tar"
    short.write_bytes(b"x" * 100)
    with pytest.raises(TruncatedFileError, match=r"short\.tar: has 100 bytes, expected 4096"):
        copy_file(short, dest, size=4096, transfer=Transfer(retry=RetryPolicy(attempts=1)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["short.tar"]
