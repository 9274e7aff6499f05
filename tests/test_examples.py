"""Every file in examples/ runs with tiny settings and prints what it should."""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from fastpack.formats import DatasetFiles, read_manifest

import fastpack
from tests.conftest import jpeg_bytes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
CLASSES = ("ants", "bees", "cats")
PER_CLASS = (6, 4, 5)


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("examples") / "src"
    for c, (name, count) in enumerate(zip(CLASSES, PER_CLASS, strict=True)):
        (root / name).mkdir(parents=True)
        for i in range(count):
            (root / name / f"{i}.jpg").write_bytes(jpeg_bytes(48 + 3 * i, 64, seed=10 * c + i))
    return root


@pytest.fixture(scope="module")
def dataset(image_folder: Path) -> Path:
    """The image folder, built; shared by the examples that read a dataset."""
    out = image_folder.parent / "dataset"
    fastpack.build(image_folder, out, fastpack.BuildOptions(workers=1, progress=False))
    return out


def run_example(name: str, *args: str | Path) -> str:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result.stdout


def label_counts() -> str:
    return " ".join(f"{label}:{count}" for label, count in enumerate(PER_CLASS))


def test_every_example_is_tested() -> None:
    tested = {
        "build_and_train.py",
        "read_with_webdataset.py",
        "read_with_dali.py",
        "train_coco_multilabel.py",
        "read_with_tensorflow.py",
        "resume_training.py",
        "train_with_stats.py",
    }
    assert {p.name for p in EXAMPLES} == tested


def test_build_and_train(image_folder: Path, tmp_path: Path) -> None:
    out = run_example(
        "build_and_train.py",
        image_folder,
        tmp_path / "ds",
        *["--workers", "1", "--batch-size", "4", "--steps", "5", "--size", "32"],
    )
    manifest = read_manifest(tmp_path / "ds" / "fastpack.json")
    assert manifest.num_samples == sum(PER_CLASS)
    assert manifest.classes == CLASSES
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", out, re.MULTILINE)]
    assert len(losses) == 5
    assert all(math.isfinite(v) and v > 0 for v in losses)
    assert re.search(r"^trained 5 steps, 20 images in .* images/s\)$", out, re.MULTILINE), out


def test_resume_training_on_another_worker_count(dataset: Path, tmp_path: Path) -> None:
    checkpoint, total = tmp_path / "ckpt.pt", sum(PER_CLASS)
    first = run_example(
        "resume_training.py",
        dataset,
        checkpoint,
        *["--workers", "2", "--batch-size", "4", "--stop-after", "2", "--size", "32"],
    )
    assert "stopped at epoch 0, position 8" in first
    second = run_example(
        "resume_training.py",
        dataset,
        checkpoint,
        *["--workers", "0", "--batch-size", "3", "--size", "32"],
    )
    assert "resumed at epoch 0, position 8" in second
    # the epoch split over two runs still holds each image once: 8 before the stop, 7 after
    assert f"epoch 0 done: {total} of {total} images" in second
    assert f"epoch 1 done: {total} of {total} images" in second


def test_build_and_train_from_an_existing_dataset(dataset: Path) -> None:
    out = run_example(
        "build_and_train.py",
        "unused",
        dataset,
        "--skip-build",
        *["--workers", "0", "--batch-size", "2", "--steps", "9", "--size", "32"],
    )
    assert f"{sum(PER_CLASS)} samples, {len(CLASSES)} classes" in out
    assert "trained 9 steps, 18 images" in out  # 9 steps cross an epoch boundary (7 batches)


def test_train_coco_multilabel_on_its_demo_set(tmp_path: Path) -> None:
    """No source: the example draws a COCO-style set, builds it and trains; the batches hold the
    padded labels and boxes, and the loss goes down."""
    out = run_example(
        "train_coco_multilabel.py",
        tmp_path / "ds",
        *["--demo-images", "32", "--workers", "1", "--batch-size", "8"],
        *["--steps", "24", "--size", "32"],
    )
    manifest = read_manifest(tmp_path / "ds" / "fastpack.json")
    assert manifest.num_samples == 32
    assert manifest.fields == ("jpg", "boxes.npy", "labels.json", "iscrowd.npy")
    assert manifest.schema["labels.json"].classes == ("red", "green", "blue")
    assert "32 images, classes red, green, blue, training on " in out
    shapes = re.search(
        r"^batch: images uint8 \(8, 32, 32, 3\), labels\.json values int64 \(8, (\d+)\) "
        r"lengths int64 \(8,\), boxes\.npy values float32 \(8, (\d+), 4\) lengths int64 \(8,\)$",
        out,
        re.MULTILINE,
    )
    assert shapes, out
    assert shapes[1] == shapes[2] != "0"  # one row per annotation, padded to the longest
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+) \(bce ", out, re.MULTILINE)]
    assert len(losses) == 24
    assert all(math.isfinite(v) and v > 0 for v in losses)
    assert sum(losses[-6:]) < 0.8 * sum(losses[:6]), losses
    assert "trained 24 steps in " in out


def test_train_with_stats_logs_each_interval(tmp_path: Path) -> None:
    out = run_example(
        "train_with_stats.py",
        tmp_path / "drawn",
        *["--draw", "24", "--workers", "1", "--batch-size", "4"],
        *["--steps", "6", "--log-every", "3", "--size", "32"],
    )
    assert "24 samples, 4 classes, training on " in out
    intervals = re.findall(
        r"^loader: 3 batches, 12 samples in [\d.]+ s \([\d,]+/s\); the trainer "
        r"waited \d+% of the time$",
        out,
        re.MULTILINE,
    )
    assert len(intervals) == 2, out
    workers = re.findall(
        r"^1 worker: decoding \d+%, reading \d+%, allocating \d+%, idle \d+%; \d+ batch(es)? made"
        r"( \(\d+ outside the slots\))?, read [\d.,]+ KiB, fetched 0 B",
        out,
        re.MULTILINE,
    )
    assert len(workers) == 2, out
    assert len(re.findall(r"^verdict: the trainer waits ", out, re.MULTILINE)) == 2, out


def test_read_with_webdataset(dataset: Path) -> None:
    out = run_example("read_with_webdataset.py", dataset, "--batch-size", "4", "--size", "24")
    assert "first batch: images uint8 (4, 24, 24, 3)" in out
    assert f"read {sum(PER_CLASS)} samples in 4 batches from " in out
    assert f"samples per label: {label_counts()}" in out


def test_read_with_dali(dataset: Path) -> None:
    out = run_example(
        "read_with_dali.py", dataset, "--batch-size", "4", "--size", "24", "--device", "cpu"
    )
    assert "first batch: images uint8 (4, 24, 24, 3) on cpu" in out
    shards = len(read_manifest(dataset / "fastpack.json").shards)
    assert f"read {sum(PER_CLASS)} samples from {shards} shards" in out
    assert f"samples per label: {label_counts()}" in out


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="TensorFlow (test extra) not installed"
)
def test_read_with_tensorflow(image_folder: Path) -> None:
    records = image_folder.parent / "records"
    options = fastpack.BuildOptions(workers=1, progress=False, shard_format="tfrecord")
    fastpack.build(image_folder, records, options)
    out = run_example("read_with_tensorflow.py", records, "--batch-size", "4", "--size", "24")
    assert "first batch: images uint8 (4, 24, 24, 3)" in out
    assert f"read {sum(PER_CLASS)} samples in 4 batches from 1 shards" in out
    assert f"samples per label: {label_counts()}" in out


def test_readers_agree_with_the_index(dataset: Path) -> None:
    """The label counts the examples print come from the shards; the index must say the same."""
    files = DatasetFiles(dataset)
    assert Counter(int(v) for v in files.index.label) == dict(enumerate(PER_CLASS))
