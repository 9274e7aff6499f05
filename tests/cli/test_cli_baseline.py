"""`fastpack build --baseline`: progressive JPEGs stored as baseline; refused in one line, before
anything is written, where the transcoder is not built."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastpack.compiler.images import baseline
from fastpack.compiler.images.jpeg_structure import read_jpeg_structure
from fastpack.formats import read_manifest

from tests.compiler._helpers import read_dataset
from tests.compiler.images._progressive import encode, load_transcoder, textured

from .conftest import CLASSES, Run, write_image_folder
from .test_cli_dataset import SAMPLES, error_line

extension = load_transcoder()


def with_progressive(root: Path) -> tuple[Path, bytes]:
    source = write_image_folder(root)
    progressive = encode(textured(48, 64, 5))
    (source / CLASSES[1] / "progressive.jpg").write_bytes(progressive)
    return source, progressive


def test_build_baseline_flag(tmp_path: Path, run: Run) -> None:
    source, progressive = with_progressive(tmp_path / "src")
    code, out, _ = run("build", source, tmp_path / "ds", "--baseline", "--no-progress")
    assert code == 0
    assert f"{SAMPLES + 1} samples" in out
    assert read_manifest(tmp_path / "ds" / "fastpack.json").build["baseline"] is True
    stored = {s.source: s.jpg for s in read_dataset(tmp_path / "ds")}
    member = stored[f"{CLASSES[1]}/progressive.jpg"]
    assert member == extension.to_baseline(progressive)
    assert read_jpeg_structure(member).frame.marker == 0xC0
    for path, data in stored.items():
        if path != f"{CLASSES[1]}/progressive.jpg":
            assert data == (source / path).read_bytes()


def test_build_baseline_is_refused_without_the_extension(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _ = with_progressive(tmp_path / "src")
    monkeypatch.setattr(baseline, "_EXTENSION", None)
    code, _, err = run("build", source, tmp_path / "ds", "--baseline", "--no-progress")
    assert code == 1
    line = error_line(err)
    assert "--baseline and --restart-markers need fastpack's JPEG transcoder" in line
    assert "apt-get install libjpeg62-turbo-dev gcc" in line
    assert "reinstall fastpack" in line
    assert not (tmp_path / "ds").exists()


def test_build_help_names_the_flag(run: Run) -> None:
    code, out, _ = run("build", "--help")
    assert code == 0
    assert "--baseline" in out
    assert "losslessly" in out


def test_build_restart_markers_flag(tmp_path: Path, run: Run) -> None:
    source, progressive = with_progressive(tmp_path / "src")
    code, out, _ = run("build", source, tmp_path / "ds", "--restart-markers", "--no-progress")
    assert code == 0
    assert f"{SAMPLES + 1} samples" in out
    assert read_manifest(tmp_path / "ds" / "fastpack.json").build["restart_width"] == 64
    for path, data in {s.source: s.jpg for s in read_dataset(tmp_path / "ds")}.items():
        original = progressive if path.endswith("progressive.jpg") else (source / path).read_bytes()
        assert data == extension.to_baseline(original, restart_width=64), path
        assert b"\xff\xdd" in data  # a DRI segment
