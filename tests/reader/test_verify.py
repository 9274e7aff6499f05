"""verify_dataset: a clean dataset passes; each kind of damage is reported, all of them at once."""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import Index
from fastpack.reader import verify_dataset
from fastpack.reader.verify import local as verify_module

from .conftest import Built, refresh_manifest, section


@pytest.fixture
def built(build_dataset: Callable[..., Built]) -> Path:
    return build_dataset().path


def shard_of(root: Path, i: int) -> tuple[Path, int, int]:
    """(shard path, payload offset, payload size) of sample `i`'s jpg."""
    shard, offset, size = Index(root / "index.fpx").locate(i, "jpg", 1 << 40)
    return root / f"shards/{shard:06d}.tar", offset, size


def test_clean_dataset(built: Path) -> None:
    report = verify_dataset(built, decode=True, progress=True)
    index = Index(built / "index.fpx")
    assert report.ok, report.format()
    assert report.problems == []
    assert report.samples_checked == index.num_samples == 12
    assert report.shards_checked == index.num_shards
    assert report.format().startswith(f"{built}: OK; {index.num_shards} shard(s), 12 sample(s)")


def test_flipped_byte(built: Path) -> None:
    path, offset, size = shard_of(built, 3)
    with path.open("r+b") as f:
        f.seek(offset + size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x40]))
    report = verify_dataset(built)
    assert not report.ok
    assert len(report.problems) == 2, report.format()
    assert f"{path}: sha256 " in report.problems[0]
    assert "the manifest records" in report.problems[0]
    key = Index(built / "index.fpx").key(3)
    assert report.problems[1].startswith(f"{path}: sample 3 (key {key}) field 'jpg': crc32 ")
    assert report.samples_checked == 12
    assert "2 problem(s)" in report.format()


def test_truncated_shard(built: Path) -> None:
    path, _, _ = shard_of(built, 11)
    size = path.stat().st_size
    os.truncate(path, size - 2048)
    problems = verify_dataset(built).problems
    assert problems[0] == f"{path}: {size - 2048} bytes, the manifest records {size}"
    assert any("past the shard's end" in p and "sample 11" in p for p in problems), problems


def test_corrupt_index_header(built: Path) -> None:
    with (built / "index.fpx").open("r+b") as f:
        f.write(b"JUNK")
    report = verify_dataset(built)
    assert not report.ok
    assert report.problems[0].startswith(f"BadMagicError: {built / 'index.fpx'}: bad magic")
    assert report.samples_checked == report.shards_checked == 0


def test_missing_shard(built: Path) -> None:
    path, _, _ = shard_of(built, 0)
    path.unlink()
    report = verify_dataset(built)
    assert f"{path}: file not found" in report.problems
    assert report.samples_checked < 12


def test_dali_index_disagrees(built: Path) -> None:
    path, offset, size = shard_of(built, 0)
    idx = path.with_suffix(".idx")
    lines = idx.read_text().splitlines()
    lines[1] = lines[1].replace(f" {size} ", f" {size + 1} ", 1)
    idx.write_text("\n".join(lines) + "\n")
    problems = verify_dataset(built).problems
    key = Index(built / "index.fpx").key(0)
    assert len(problems) == 1
    assert problems[0].startswith(f"{idx}: sample 0 lists [('{key}.jpg', {offset}, {size + 1})")
    assert f"the index has [('{key}.jpg', {offset}, {size})" in problems[0]
    idx.write_text("v1.2 banana\n")
    problems = verify_dataset(built).problems
    assert problems == [f"ShardFormatError: {idx}: first line should be 'v1.2 <samples>', "
                        "found ['v1.2', 'banana']"]  # fmt: skip


def test_label_disagrees_with_cls(built: Path) -> None:
    labels = section(built, "label")
    labels[5] += 1
    labels.flush()
    del labels
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    assert len(problems) == 1
    assert "sample 5" in problems[0]
    assert "field 'cls': holds b'" in problems[0]


def test_decode_finds_a_broken_jpeg_with_a_valid_checksum(built: Path) -> None:
    path, offset, size = shard_of(built, 4)
    with path.open("r+b") as f:
        f.seek(offset + size // 2)
        f.write(b"\xff\xd9")
        f.seek(offset)
        data = f.read(size)
    crcs = section(built, "jpg.crc32")
    crcs[4] = zlib.crc32(data)
    crcs.flush()
    del crcs
    refresh_manifest(built)
    assert verify_dataset(built).ok
    report = verify_dataset(built, decode=True)
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"{path}: sample 4 ")
    assert "does not decode (Corrupt JPEG data" in report.problems[0]


def test_problem_list_is_capped(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "MAX_PROBLEMS", 2)
    crcs = section(built, "cls.crc32")
    crcs[:] = crcs + 1
    crcs.flush()
    del crcs
    report = verify_dataset(built)
    assert len(report.problems) == 2
    assert report.problems_omitted == 11  # the index's SHA-256 and 12 checksums, 2 kept
    assert report.format().endswith("  ... and 11 more")
