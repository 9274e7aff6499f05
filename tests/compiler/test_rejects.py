"""Inputs the compiler cannot use: rejected into rejects.jsonl, or a failure with `strict`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.formats import read_manifest

from tests.compiler._helpers import (
    QUIET,
    cmyk_jpeg,
    gray_jpeg,
    read_dataset,
    tree_bytes,
    with_noise_in_scan,
    with_orientation,
)
from tests.conftest import jpeg_bytes, png_bytes

GOOD = jpeg_bytes(24, 32, seed=1)


def hostile_folder(root: Path) -> Path:
    """One class of good, convertible and unusable inputs (names sort in this order)."""
    d = root / "a"
    d.mkdir(parents=True)
    files = {
        "00_good.jpg": GOOD,
        "01_empty.jpg": b"",
        "02_text.jpg": b"this is a text file, not an image\n",
        "03_truncated.jpg": jpeg_bytes(40, 40, seed=2)[:-400],
        "04_cmyk.jpg": cmyk_jpeg(seed=3),
        "05_gray.jpg": gray_jpeg(seed=4),
        "06_alpha.png": png_bytes(seed=5, alpha=True),
        "07_rotated.jpg": with_orientation(jpeg_bytes(seed=6), 6),
    }
    for name, data in files.items():
        (d / name).write_bytes(data)
    (d / "08_broken_link.jpg").symlink_to(d / "does-not-exist.jpg")  # unreadable, even as root
    os.mkfifo(d / "09_fifo.jpg")
    (d / "10_good.jpg").write_bytes(GOOD)
    return root


EXPECTED_REJECTS = [
    ("a/01_empty.jpg", "empty file"),
    ("a/02_text.jpg", "not a decodable image"),
    ("a/03_truncated.jpg", "corrupt JPEG: truncated: no EOI marker"),
    ("a/08_broken_link.jpg", "cannot read: No such file or directory"),
    ("a/09_fifo.jpg", "cannot read: not a regular file"),
]


@pytest.mark.parametrize("workers", [1, 2])
def test_rejects_are_reported_in_plan_order(tmp_path: Path, workers: int) -> None:
    source = hostile_folder(tmp_path / "src")
    out = tmp_path / "out"
    summary = build(source, out, BuildOptions(workers=workers, shard_size=1, progress=False))
    lines = (out / "rejects.jsonl").read_text().splitlines()
    rejects = [json.loads(line) for line in lines]
    assert [r["path"] for r in rejects] == [p for p, _ in EXPECTED_REJECTS]
    for r, (_, reason) in zip(rejects, EXPECTED_REJECTS, strict=True):
        assert r["reason"].startswith(reason), r
    assert (summary.inputs, summary.samples, summary.rejected, summary.converted) == (11, 6, 5, 4)
    assert "5 rejected (listed in rejects.jsonl)" in summary.format()
    stats = read_manifest(out / "fastpack.json").stats
    assert (stats["inputs"], stats["samples"], stats["rejected"], stats["converted"]) == (
        11,
        6,
        5,
        4,
    )
    samples = read_dataset(out)
    assert [s.source for s in samples] == [
        "a/00_good.jpg",
        "a/04_cmyk.jpg",
        "a/05_gray.jpg",
        "a/06_alpha.png",
        "a/07_rotated.jpg",
        "a/10_good.jpg",
    ]
    # Keys stay the plan positions: rejects leave gaps, shards (one planned sample each) go empty.
    assert [s.key for s in samples] == [
        "000000000",
        "000000004",
        "000000005",
        "000000006",
        "000000007",
        "000000010",
    ]
    assert samples[0].jpg == samples[-1].jpg == GOOD


def test_check_decides_whether_corrupt_entropy_data_is_rejected(tmp_path: Path) -> None:
    d = tmp_path / "src" / "a"
    d.mkdir(parents=True)
    noisy = with_noise_in_scan(jpeg_bytes(64, 80, seed=7), seed=7)
    (d / "0_good.jpg").write_bytes(GOOD)
    (d / "1_noisy.jpg").write_bytes(noisy)
    (d / "2_truncated.jpg").write_bytes(jpeg_bytes(64, 80, seed=8)[:-100])
    kept, rejected = {}, {}
    for check in ("structure", "decode"):
        out = tmp_path / check
        summary = build(tmp_path / "src", out, BuildOptions(workers=1, check=check, **QUIET))
        rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
        rejected[check] = {r["path"]: r["reason"] for r in rejects}
        kept[check] = {s.source: s.jpg for s in read_dataset(out)}
        assert summary.rejected == len(rejects)
        assert read_manifest(out / "fastpack.json").build["check"] == check
    assert kept["structure"] == {"a/0_good.jpg": GOOD, "a/1_noisy.jpg": noisy}
    assert kept["decode"] == {"a/0_good.jpg": GOOD}
    truncated = "corrupt JPEG: truncated: no EOI marker after the scan data"
    assert rejected["structure"]["a/2_truncated.jpg"].startswith(truncated)
    assert rejected["decode"]["a/2_truncated.jpg"].startswith(truncated)
    assert rejected["decode"]["a/1_noisy.jpg"].startswith("corrupt JPEG: Corrupt JPEG data")
    assert set(rejected["structure"]) == {"a/2_truncated.jpg"}


def test_list_entries_that_are_missing_or_directories(tmp_path: Path) -> None:
    (tmp_path / "img.jpg").write_bytes(GOOD)
    (tmp_path / "adir.jpg").mkdir()
    (tmp_path / "l.csv").write_text("img.jpg,1\nmissing.jpg,2\nadir.jpg,3\n")
    summary = build(tmp_path / "l.csv", tmp_path / "out", BuildOptions(workers=1, progress=False))
    rejects = [json.loads(x) for x in (tmp_path / "out/rejects.jsonl").read_text().splitlines()]
    assert rejects == [
        {"path": "missing.jpg", "reason": "cannot read: No such file or directory"},
        {"path": "adir.jpg", "reason": "cannot read: not a regular file"},
    ]
    assert summary.samples == 1


def test_no_rejects_file_without_rejects(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    source = make_image_folder(classes=1, per_class=2)
    build(source, tmp_path / "out", BuildOptions(workers=1, progress=False))
    assert not (tmp_path / "out/rejects.jsonl").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_strict_fails_naming_the_file_and_keeps_finished_shards(
    tmp_path: Path, workers: int
) -> None:
    source = hostile_folder(tmp_path / "src")
    for name in ("02_text.jpg", "03_truncated.jpg", "08_broken_link.jpg", "09_fifo.jpg"):
        (source / "a" / name).unlink()  # the first reject left is a/01_empty.jpg, at position 1
    out = tmp_path / "out"
    options = BuildOptions(workers=workers, shard_size=1, strict=True, progress=False)
    with pytest.raises(BuildError, match=r"a/01_empty\.jpg: empty file \(a strict build stops"):
        build(source, out, options)
    assert not (out / "fastpack.json").exists()
    assert (out / "shards/000000.tar").exists()  # finished before the failure, and kept
    assert not (out / "shards/000001.tar").exists()
    assert not list((out / "shards").glob("000001.*"))  # no temporary files of the failed job
    # Fix the input, resume: the same dataset as a clean build of the fixed source.
    (source / "a/01_empty.jpg").write_bytes(GOOD)
    build(source, out, BuildOptions(workers=1, shard_size=1, resume=True, progress=False))
    build(source, tmp_path / "clean", BuildOptions(workers=1, shard_size=1, progress=False))
    assert tree_bytes(out) == tree_bytes(tmp_path / "clean")
