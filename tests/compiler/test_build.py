"""build -> read: every stored byte, label, key and source is the input's; manifest and shards."""

from __future__ import annotations

import io
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import google_crc32c
import pytest
from fastpack.compiler import BuildOptions, BuildSummary, build
from fastpack.formats import DatasetFiles, read_manifest, scan_members
from fastpack.formats.checksum import file_crc32c, file_sha256
from fastpack.formats.layout import key_width, sample_key
from fastpack.formats.wds_index import read_wds_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.compiler._helpers import QUIET, read_dataset
from tests.conftest import jpeg_bytes, png_bytes


def check_shards_agree_with_index(out: Path) -> None:
    """Each shard's members, its DALI index and index.fpx describe the same bytes."""
    files = DatasetFiles(out)
    index, per_shard = files.index, files.manifest.build["samples_per_shard"]
    row = 0
    for shard, info in enumerate(files.manifest.shards):
        members = list(scan_members(files.shard_path(shard)))
        listed = [m for sample in read_wds_index(files.shard_index_path(shard)) for m in sample]
        assert [(m.name, m.data_offset, m.size) for m in members] == [
            (m.name, m.data_offset, m.size) for m in listed
        ]
        assert len(members) == 2 * info.samples
        assert info.samples == per_shard or shard == len(files.manifest.shards) - 1
        for k in range(info.samples):
            jpg, cls = members[2 * k : 2 * k + 2]
            assert (jpg.name, cls.name) == (f"{index.key(row)}.jpg", f"{index.key(row)}.cls")
            assert (int(index.offsets("jpg")[row]), int(index.sizes("cls")[row])) == (
                jpg.data_offset,
                cls.size,
            )
            assert int(index.shard[row]) == shard
            row += 1
    assert row == len(files)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.tuples(st.integers(8, 90), st.integers(8, 90)), min_size=1, max_size=14),
    classes=st.integers(1, 3),
    shard_size=st.integers(1, 60_000),
    workers=st.integers(1, 2),
)
def test_build_then_read_returns_the_inputs(
    sizes: list[tuple[int, int]], classes: int, shard_size: int, workers: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source, originals = Path(tmp, "src"), {}
        for i, (h, w) in enumerate(sizes):
            path = f"c{i % classes}/{i:03d}.jpg"
            originals[path] = jpeg_bytes(h, w, seed=i)
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            (source / path).write_bytes(originals[path])
        summary = build(
            source, Path(tmp, "out"), BuildOptions(workers=workers, shard_size=shard_size, **QUIET)
        )
        samples = read_dataset(Path(tmp, "out"))
        order = sorted(originals)  # class folders, then names: the plan order
        assert [s.source for s in samples] == order
        assert [s.jpg for s in samples] == [originals[p] for p in order]
        assert [s.label for s in samples] == [int(p[1]) for p in order]
        assert [s.cls for s in samples] == [p[1].encode() for p in order]
        assert [s.key for s in samples] == [sample_key(i, 9) for i in range(len(order))]
        index = DatasetFiles(Path(tmp, "out")).index
        assert [int(c) for c in index.crc32("jpg")] == [zlib.crc32(s.jpg) for s in samples]
        check_shards_agree_with_index(Path(tmp, "out"))
        assert (summary.inputs, summary.samples, summary.rejected, summary.converted) == (
            len(sizes),
            len(sizes),
            0,
            0,
        )


def test_list_source_end_to_end(tmp_path: Path) -> None:
    images = tmp_path / "data" / "images"
    images.mkdir(parents=True)
    lines, expected = ["path,label"], []
    for i in range(6):
        data = jpeg_bytes(20 + i, 30, seed=i)
        (images / f"{i}.jpg").write_bytes(data)
        lines.append(f"images/{i}.jpg,{['cat', 'dog', 'emu'][i % 3]}")
        expected.append((f"images/{i}.jpg", data, i % 3))
    (tmp_path / "data" / "train.csv").write_text("\n".join(lines) + "\n")
    build(tmp_path / "data" / "train.csv", tmp_path / "out", BuildOptions(workers=1, **QUIET))
    assert [(s.source, s.jpg, s.label) for s in read_dataset(tmp_path / "out")] == expected
    manifest = read_manifest(tmp_path / "out" / "fastpack.json")
    assert manifest.classes == ("cat", "dog", "emu")
    assert manifest.build["source_kind"] == "list"


def test_wds_source_end_to_end(tmp_path: Path) -> None:
    png = png_bytes(20, 24, seed=3)
    members = [("x.jpg", jpeg_bytes(seed=1)), ("x.cls", b"4"), ("y.png", png), ("y.cls", b"2")]
    (tmp_path / "tars").mkdir()
    with tarfile.open(tmp_path / "tars" / "part-0.tar", "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    summary = build(tmp_path / "tars", tmp_path / "out", BuildOptions(workers=1, **QUIET))
    samples = read_dataset(tmp_path / "out")
    assert [(s.source, s.label) for s in samples] == [("part-0.tar:x", 4), ("part-0.tar:y", 2)]
    assert samples[0].jpg == members[0][1]
    assert samples[1].jpg[:3] == b"\xff\xd8\xff"  # the PNG, converted
    assert (summary.converted, read_manifest(tmp_path / "out/fastpack.json").classes) == (1, ())


def test_manifest_records_the_build_but_not_the_machine(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    source = make_image_folder(classes=2, per_class=5)
    out = tmp_path / "out"
    summary = build(source, out, BuildOptions(workers=2, shard_size=8000, max_side=500, **QUIET))
    manifest = read_manifest(out / "fastpack.json")
    text = (out / "fastpack.json").read_text()
    assert str(tmp_path) not in text
    assert "workers" not in text
    per_shard = manifest.build["samples_per_shard"]
    assert manifest.build == {
        "source_kind": "folder",
        "shard_size": 8000,
        "samples_per_shard": per_shard,
        "shuffle_seed": None,
        "max_side": 500,
        "quality": 90,
        "check": "structure",
    }
    sizes = [f.stat().st_size for f in sorted(source.rglob("*.jpg"))]
    overhead = 1792  # two headers, a cls block, half a block of padding
    assert per_shard == max(1, 8000 * len(sizes) // (sum(sizes) + overhead * len(sizes)))
    assert manifest.key_width == key_width(10)
    assert manifest.stats == {
        "inputs": 10,
        "samples": 10,
        "rejected": 0,
        "converted": 0,
        "payload_bytes": sum(sizes) + 10,
    }
    assert summary.shards == len(manifest.shards) == -(-10 // per_shard)
    assert summary.bytes == sum(s.bytes for s in manifest.shards)
    for shard in manifest.shards:  # both checksums of each shard, computed as it was written
        assert shard.sha256 == file_sha256(out / shard.name)
        assert shard.crc32c == file_crc32c(out / shard.name)
        assert shard.crc32c == google_crc32c.value((out / shard.name).read_bytes())
    assert not (out / ".fastpack-build").exists()
    assert sorted(p.name for p in out.iterdir()) == ["fastpack.json", "index.fpx", "shards"]


def test_summary_and_progress_bar(
    make_image_folder: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_image_folder(classes=2, per_class=3)
    summary = build(source, tmp_path / "out", BuildOptions(workers=1, progress=True))
    err = capsys.readouterr().err
    assert "6/6" in err
    assert "img/s" in err
    text = summary.format()
    assert "6 samples from 6 inputs in 1 shard (" in text
    assert "0 converted to RGB JPEG, 0 rejected" in text
    build(source, tmp_path / "quiet", BuildOptions(workers=1, progress=False))
    assert capsys.readouterr().err == ""


def test_summary_text() -> None:
    summary = BuildSummary(
        inputs=2000, samples=1990, shards=1, bytes=50_000_000, rejected=10, converted=3, seconds=2.0
    )
    assert summary.format() == (
        "1,990 samples from 2,000 inputs in 1 shard (50.0 MB) in 2.0 s "
        "(1,000 inputs/s, 25.0 MB/s)\n"
        "3 converted to RGB JPEG, 10 rejected (listed in rejects.jsonl)"
    )
    instant = BuildSummary(
        inputs=1, samples=1, shards=2, bytes=0, rejected=0, converted=0, seconds=0
    )
    assert instant.format() == (
        "1 sample from 1 input in 2 shards (0.0 MB) in 0.0 s\n0 converted to RGB JPEG, 0 rejected"
    )
