"""`fastpack demo` with tiny settings, and its error paths."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import simplejpeg
from fastpack.formats import FastpackError, read_manifest

from fastpack.synthetic import SHAPES, class_colour, make_image_folder

from .conftest import Run

TINY = ["--images", "24", "--classes", "3", "--batches", "4", "--batch-size", "8", "--size", "32"]


def test_demo_builds_and_trains(tmp_path: Path, run: Run) -> None:
    code, out, err = run("demo", "--dir", tmp_path / "demo", *TINY, "--workers", "1")
    assert code == 0, err
    manifest = read_manifest(tmp_path / "demo" / "dataset" / "fastpack.json")
    assert manifest.num_samples == 24
    assert len(manifest.classes) == 3
    assert "batch 4/4: loss " in out
    match = re.search(r"trained 4 batches \(24 images.*: (\d+) images/s.*loss (\S+) -> (\S+)", out)
    assert match, out
    assert int(match.group(1)) > 0
    assert all(math.isfinite(float(match.group(i))) for i in (2, 3))


def test_demo_refuses_a_directory_in_use(tmp_path: Path, run: Run) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code, _, err = run("demo", "--dir", tmp_path, *TINY)
    assert code == 1
    assert err.strip() == (
        f"fastpack: error: {tmp_path}: demo directory is not empty; give a new or empty one"
    )
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_demo_needs_a_batch_worth_of_images(tmp_path: Path, run: Run) -> None:
    code, _, err = run("demo", "--dir", tmp_path / "d", "--images", "4", "--batch-size", "8")
    assert code == 1
    assert "4 images cannot fill one batch of 8" in err


def test_demo_without_torch_says_so(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    code, _, err = run("demo", "--dir", tmp_path / "d", *TINY)
    assert code == 1
    assert "PyTorch, which is not installed" in err
    assert "Traceback" not in err
    assert not (tmp_path / "d").exists()  # nothing drawn or built before the check


def colour_shares(pixels: np.ndarray, classes: int) -> list[float]:
    """Share of the pixels within 40 levels of each class's colour."""
    flat = pixels.reshape(-1, 3).astype(np.float32)
    return [
        float((np.abs(flat - class_colour(c, classes)).max(axis=1) < 40).mean())
        for c in range(classes)
    ]


def test_synthetic_images_are_real_jpegs_whose_class_shows(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path, images=16, classes=4, min_side=40, max_side=60)
    folders = sorted(p.name for p in root.iterdir())
    assert folders == [f"class_{c:02d}_{SHAPES[c]}" for c in range(4)]
    for c, folder in enumerate(folders):
        files = sorted((root / folder).iterdir())
        assert len(files) == 4
        for file in files:
            pixels = simplejpeg.decode_jpeg(file.read_bytes())
            assert min(pixels.shape[:2]) >= 40
            assert max(pixels.shape[:2]) <= 60
            shares = colour_shares(pixels, 4)
            assert int(np.argmax(shares)) == c, (file, shares)


def test_synthetic_folder_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(FastpackError, match="need images >= 1"):
        make_image_folder(tmp_path, images=0, classes=2)
