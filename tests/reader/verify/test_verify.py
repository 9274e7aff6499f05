"""verify_dataset: a clean dataset passes; each kind of damage is reported, all of them at once.
verify_remote, on the same datasets at a `memory://` URL, reports the same problems by URL."""

from __future__ import annotations

import os
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import cast

import fsspec
import pytest
from fastpack.formats import Index
from fastpack.reader import verify_dataset, verify_remote
from fastpack.reader.verify import local as verify_module
from fastpack.storage import Location, RetryPolicy

from ..conftest import Built, refresh_manifest, section


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
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"{idx}: sha256 ")  # the manifest records the .idx's too
    assert problems[1].startswith(f"{idx}: sample 0 lists [('{key}.jpg', {offset}, {size + 1})")
    assert f"the index has [('{key}.jpg', {offset}, {size})" in problems[1]
    idx.write_text("v1.2 banana\n")
    problems = verify_dataset(built).problems
    assert problems[1:] == [f"ShardFormatError: {idx}: first line should be 'v1.2 <samples>', "
                            "found ['v1.2', 'banana']"]  # fmt: skip


def test_label_disagrees_with_cls(built: Path) -> None:
    labels = section(built, "label")
    labels[5] += 1
    labels.flush()
    del labels
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    assert len(problems) == 2, problems
    source = Index(built / "index.fpx").source(5)
    assert problems[0] == (  # built from a folder: the class is the source's folder
        f"{built / 'index.fpx'}: sample 5 of class 2 ('class_02') comes from {source!r}, not "
        "from the class's folder 'class_02/'"
    )
    assert "sample 5" in problems[1]
    assert "field 'cls': holds b'" in problems[1]


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


# verify_remote on the same datasets, published to fsspec's in-memory filesystem (`memory://`,
# conftest's `publish`): it must report what verify_dataset reports, named by URL, whatever its
# chunk size.


def flip_payload_byte(root: Path) -> None:
    path, offset, size = shard_of(root, 3)
    data = bytearray(path.read_bytes())
    data[offset + size // 2] ^= 0x40
    path.write_bytes(bytes(data))


def truncate_shard(root: Path) -> None:
    path, _, _ = shard_of(root, 11)
    os.truncate(path, path.stat().st_size - 2048)


def dali_index_disagrees(root: Path) -> None:
    path, _, size = shard_of(root, 0)
    idx = path.with_suffix(".idx")
    idx.write_text(idx.read_text().replace(f" {size} ", f" {size + 1} ", 1))


def dali_index_unreadable(root: Path) -> None:
    shard_of(root, 0)[0].with_suffix(".idx").write_text("v1.2 banana\n")


def label_disagrees(root: Path) -> None:
    labels = section(root, "label")
    labels[5] += 1
    labels.flush()
    del labels
    refresh_manifest(root)


def broken_jpeg(root: Path) -> None:
    path, offset, size = shard_of(root, 4)
    data = bytearray(path.read_bytes())
    data[offset + size // 2 : offset + size // 2 + 2] = b"\xff\xd9"
    path.write_bytes(bytes(data))
    crcs = section(root, "jpg.crc32")
    crcs[4] = zlib.crc32(data[offset : offset + size])
    crcs.flush()
    del crcs
    refresh_manifest(root)


def corrupt_index_header(root: Path) -> None:
    with (root / "index.fpx").open("r+b") as f:
        f.write(b"JUNK")


DAMAGES = [
    None, flip_payload_byte, truncate_shard, dali_index_disagrees, dali_index_unreadable,
    label_disagrees, broken_jpeg, corrupt_index_header,
]  # fmt: skip


@pytest.mark.parametrize("chunk_bytes", [7, 4096])
@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.__name__ if d else "clean")
def test_remote_reports_what_local_reports(
    built: Path,
    publish: Callable[[Path], str],
    damage: Callable[[Path], None] | None,
    chunk_bytes: int,
) -> None:
    if damage is not None:
        damage(built)
    url = publish(built)
    local = verify_dataset(built, decode=True)
    remote = verify_remote(url, decode=True, progress=True, chunk_bytes=chunk_bytes)
    assert local.ok is (damage is None), local.format()
    assert remote.problems == [p.replace(str(built), url) for p in local.problems]
    assert (remote.shards_checked, remote.samples_checked, remote.problems_omitted) == (
        local.shards_checked, local.samples_checked, local.problems_omitted,
    )  # fmt: skip
    assert remote.format().startswith(f"{url}: ")


def test_remote_problem_list_is_capped(
    built: Path, publish: Callable[[Path], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verify_module, "MAX_PROBLEMS", 2)
    crcs = section(built, "cls.crc32")
    crcs[:] = crcs + 1
    crcs.flush()
    del crcs
    report = verify_remote(publish(built), chunk_bytes=100)
    assert len(report.problems) == 2
    assert report.problems_omitted == 11
    assert report.format().endswith("  ... and 11 more")


def test_remote_missing_objects_are_problems(built: Path, publish: Callable[[Path], str]) -> None:
    url = publish(built)
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory:/")
    fs.rm(f"{root}/shards/000000.tar")
    fs.rm(f"{root}/shards/000001.idx")
    report = verify_remote(url)
    index = Index(built / "index.fpx")
    assert report.problems[0] == f"{url}/shards/000000.tar: not found"
    assert report.problems[1].startswith(
        f"DatasetNotFoundError: {url}/shards/000001.idx: not found"
    )
    assert len(report.problems) == 2
    assert report.shards_checked == index.num_shards - 1
    assert report.samples_checked == 12 - int((index.shard == 0).sum())
    fs.rm(f"{root}/index.fpx")
    assert verify_remote(url).problems == [f"{url}/index.fpx: not found"]
    fs.rm(f"{root}/fastpack.json")
    (problem,) = verify_remote(url).problems
    assert problem.startswith(f"DatasetNotFoundError: {url}/fastpack.json: no manifest")


def test_remote_read_failure_is_a_problem_and_the_rest_is_checked(
    built: Path, publish: Callable[[Path], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = publish(built)
    location = Location(url)
    cat_file = location.fs.cat_file

    def failing(path: str, *args: object, **kwargs: object) -> bytes:
        if path.endswith("/shards/000001.tar"):
            raise ConnectionError("injected")
        return cast(bytes, cat_file(path, *args, **kwargs))

    monkeypatch.setattr(location.fs, "cat_file", failing)
    report = verify_remote(url, retry=RetryPolicy(attempts=2, backoff_s=0), chunk_bytes=1000)
    index = Index(built / "index.fpx")
    assert report.problems == [
        f"FetchError: {url}/shards/000001.tar [0, 1000): unavailable after 2 attempts; last "
        "error: ConnectionError: injected"
    ]
    assert report.shards_checked == index.num_shards
    assert report.samples_checked == 12 - int((index.shard == 1).sum())


def test_remote_memory_is_one_chunk_and_one_payload(
    build_dataset: Callable[..., Built], publish: Callable[[Path], str]
) -> None:
    root = build_dataset(classes=4, per_class=20, shard_size=1 << 30).path
    url = publish(root)
    index = Index(root / "index.fpx")
    shard = (root / "shards/000000.tar").stat().st_size
    largest = int(max(index.sizes(f).max() for f in index.fields))
    assert index.num_shards == 1
    assert shard > 20 * (4096 + largest)
    peaks = {}
    for chunk_bytes in (4096, 1 << 30):
        tracemalloc.start()
        try:
            assert verify_remote(url, chunk_bytes=chunk_bytes).ok
            peaks[chunk_bytes] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks[1 << 30] > shard  # the whole shard in one read...
    assert peaks[4096] < shard / 4, (peaks, shard, largest)  # ...or a chunk and a payload
