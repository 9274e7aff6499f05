"""build, info and verify on real datasets, good and damaged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fastpack.compiler import BuildOptions
from fastpack.formats import DatasetFiles, read_manifest
from fastpack.reader.image import decoder
from fastpack.storage.file_system import file_system_type, is_remote

from tests.compiler._helpers import with_noise_in_scan
from tests.conftest import jpeg_bytes

from .conftest import CLASSES, PER_CLASS, Run, write_image_folder

SAMPLES = len(CLASSES) * PER_CLASS


def error_line(err: str) -> str:
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("fastpack: error: ")
    return line


def test_build_writes_the_dataset_and_prints_the_summary(tmp_path: Path, run: Run) -> None:
    source = write_image_folder(tmp_path / "src")
    code, out, _ = run(
        "build",
        source,
        tmp_path / "ds",
        "--workers",
        "2",
        "--shard-size",
        "4KiB",
        "--shuffle-seed",
        "3",
        "--max-side",
        "50",
        "--quality",
        "80",
        "--no-progress",
    )
    assert code == 0
    manifest = read_manifest(tmp_path / "ds" / "fastpack.json")
    assert manifest.num_samples == SAMPLES
    assert manifest.classes == CLASSES
    assert len(manifest.shards) > 1  # a 4 KiB target cannot hold 15 images in one shard
    assert manifest.build["shuffle_seed"] == 3
    assert manifest.build["max_side"] == 50
    assert manifest.stats["converted"] > 0  # images wider than 50 px were shrunk
    assert str(SAMPLES) in out


def test_info(built: tuple[Path, Path], run: Run) -> None:
    code, out, _ = run("info", built[1])
    assert code == 0
    manifest = read_manifest(built[1] / "fastpack.json")
    assert f"samples   {SAMPLES}" in out
    assert f"shards    {len(manifest.shards)}" in out
    assert f"classes   {len(CLASSES)}: {', '.join(CLASSES)}" in out
    total = sum(s.bytes for s in manifest.shards) + manifest.index.bytes
    assert f"bytes     {total} " in out
    kind = file_system_type(built[1])
    how = "network file system" if is_remote(kind) else "local: Dataset maps the shards"
    assert f"storage   {kind} ({how}" in out
    assert f"decoder   {decoder()}" in out


def test_info_json(built: tuple[Path, Path], run: Run) -> None:
    code, out, _ = run("info", built[1], "--json")
    assert code == 0
    info = json.loads(out)
    manifest = read_manifest(built[1] / "fastpack.json")
    assert info["samples"] == SAMPLES
    assert info["classes"] == list(CLASSES)
    assert info["shards"] == len(manifest.shards)
    assert info["build"] == dict(manifest.build)
    assert info["stats"] == dict(manifest.stats)
    assert info["file_system"] == file_system_type(built[1])
    assert info["io"] == ("pread" if is_remote(info["file_system"]) else "mmap")
    assert info["decoder"] == str(decoder())


def test_verify_a_good_dataset(built: tuple[Path, Path], run: Run) -> None:
    for extra in ([], ["--decode"]):
        code, out, err = run("verify", built[1], *extra)
        assert (code, err) == (0, ""), out


def flip_payload_byte(root: Path, sample: int) -> Path:
    """Change one byte in the middle of sample `sample`'s JPEG data; returns its shard."""
    files = DatasetFiles(root)
    shard = int(files.index.shard[sample])
    path = files.shard_path(shard)
    offset = int(files.index.offsets("jpg")[sample]) + int(files.index.sizes("jpg")[sample]) // 2
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def test_verify_finds_a_changed_byte(dataset_copy: Path, run: Run) -> None:
    shard = flip_payload_byte(dataset_copy, sample=4)
    for extra in ([], ["--decode"]):
        code, out, _ = run("verify", dataset_copy, *extra)
        assert code == 1
        assert shard.name in out


def test_verify_finds_a_truncated_shard(dataset_copy: Path, run: Run) -> None:
    path = DatasetFiles(dataset_copy).shard_path(0)
    path.write_bytes(path.read_bytes()[:-1024])
    code, out, err = run("verify", dataset_copy)
    assert code == 1
    assert path.name in out + err


def test_verify_finds_a_missing_shard(dataset_copy: Path, run: Run) -> None:
    path = DatasetFiles(dataset_copy).shard_path(0)
    path.unlink()
    code, out, err = run("verify", dataset_copy)
    assert code == 1
    assert path.name in out + err


def test_verify_not_a_dataset(tmp_path: Path, run: Run) -> None:
    code, out, err = run("verify", tmp_path)
    assert code == 1
    assert "not a fastpack dataset" in out + err


def test_build_from_a_missing_source(tmp_path: Path, run: Run) -> None:
    code, _, err = run("build", tmp_path / "nope", tmp_path / "out", "--no-progress")
    assert code == 1
    assert str(tmp_path / "nope") in error_line(err)
    assert not (tmp_path / "out" / "fastpack.json").exists()


def test_build_counts_rejects_and_strict_fails(tmp_path: Path, run: Run) -> None:
    source = write_image_folder(tmp_path / "src")
    bad = source / CLASSES[1] / "broken.jpg"
    bad.write_bytes(b"\xff\xd8 this is not a JPEG")
    code, _, err = run("build", source, tmp_path / "strict", "--strict", "--no-progress")
    assert code == 1
    assert "broken.jpg" in error_line(err)
    assert not (tmp_path / "strict" / "fastpack.json").exists()

    code, _, _ = run("build", source, tmp_path / "lenient", "--no-progress")
    assert code == 0
    manifest = read_manifest(tmp_path / "lenient" / "fastpack.json")
    assert (manifest.num_samples, manifest.stats["rejected"]) == (SAMPLES, 1)
    rejects = (tmp_path / "lenient" / "rejects.jsonl").read_text()
    assert "broken.jpg" in rejects


def test_build_defaults_are_the_compilers(built: tuple[Path, Path]) -> None:
    manifest = read_manifest(built[1] / "fastpack.json")
    defaults = BuildOptions()
    assert manifest.build["shard_size"] == defaults.shard_size
    assert manifest.build["quality"] == defaults.quality
    assert manifest.build["check"] == defaults.check == "structure"
    assert manifest.build["shuffle_seed"] is None


def test_build_check_flag(tmp_path: Path, run: Run) -> None:
    source = write_image_folder(tmp_path / "src")
    noisy = source / CLASSES[0] / "noisy.jpg"
    noisy.write_bytes(with_noise_in_scan(jpeg_bytes(64, 80, seed=9), seed=9))
    for check, rejected in (("structure", 0), ("decode", 1)):
        code, _, _ = run("build", source, tmp_path / check, "--check", check, "--no-progress")
        assert code == 0
        manifest = read_manifest(tmp_path / check / "fastpack.json")
        assert manifest.build["check"] == check
        assert manifest.stats["rejected"] == rejected
    rejects = (tmp_path / "decode" / "rejects.jsonl").read_text()
    assert f"{CLASSES[0]}/noisy.jpg" in rejects
    assert "Corrupt JPEG data" in rejects
    code, _, err = run("build", source, tmp_path / "decode", "--check", "structure", "--resume")
    assert code == 1
    assert "made with check='decode' (now 'structure')" in error_line(err)


def test_info_into_a_closed_pipe_ends_quietly(built: tuple[Path, Path]) -> None:
    """`fastpack info D | head`: a reader that went away is no traceback, and exits 141."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, fastpack.cli; sys.exit(fastpack.cli.main())",
                "info",
                str(built[1]),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "BrokenPipeError" not in done.stderr, done.stderr
