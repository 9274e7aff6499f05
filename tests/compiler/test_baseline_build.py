"""`baseline`: a build stores progressive JPEGs transcoded to baseline (the same pixels) and
baseline ones byte for byte; a progressive file that does not transcode is a reject; the option
is recorded, checked on resume, and refused where the transcoder is not built."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import simplejpeg
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.images import BaselineUnavailableError, baseline
from fastpack.compiler.images.jpeg_structure import read_jpeg_structure
from fastpack.formats import read_manifest

from tests.compiler._helpers import QUIET, read_dataset
from tests.compiler.images._progressive import encode, load_transcoder, textured, truncated_scan

extension = load_transcoder()

SIZES = [(60, 90), (33, 47), (80, 64)]


def mixed_folder(root: Path) -> dict[str, bytes]:
    """Two classes of progressive and baseline JPEGs (several subsamplings, a restart
    interval): their bytes by relative path."""
    files = {}
    for c, name in enumerate(("a", "b")):
        (root / name).mkdir(parents=True)
        for i, (h, w) in enumerate(SIZES):
            image = textured(h, w, 10 * c + i)
            sampling = ("4:2:0", "4:2:2", "4:4:4")[i]
            files[f"{name}/{i}_progressive.jpg"] = encode(image, sampling, restart=i)
            files[f"{name}/{i}_baseline.jpg"] = encode(image, sampling, progressive=False)
    for path, data in files.items():
        (root / path).write_bytes(data)
    return files


def frame(data: bytes) -> int:
    return read_jpeg_structure(data).frame.marker


@pytest.mark.parametrize("workers", [1, 2])
def test_progressive_members_are_stored_as_baseline_with_the_same_pixels(
    tmp_path: Path, workers: int
) -> None:
    files = mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    summary = build(tmp_path / "src", out, BuildOptions(workers=workers, baseline=True, **QUIET))
    assert (summary.samples, summary.rejected, summary.converted) == (len(files), 0, 0)
    stored = {s.source: s.jpg for s in read_dataset(out)}
    assert stored.keys() == files.keys()
    for path, original in files.items():
        member = stored[path]
        assert frame(member) in (0xC0, 0xC1), path
        if path.endswith("_baseline.jpg"):
            assert member == original, path
        else:
            assert frame(original) == 0xC2
            assert member == extension.to_baseline(original)
            np.testing.assert_array_equal(
                simplejpeg.decode_jpeg(member), simplejpeg.decode_jpeg(original)
            )
    assert read_manifest(out / "fastpack.json").build["baseline"] is True


def test_without_the_option_every_jpeg_is_stored_byte_for_byte(tmp_path: Path) -> None:
    files = mixed_folder(tmp_path / "src")
    build(tmp_path / "src", tmp_path / "out", BuildOptions(workers=1, **QUIET))
    assert {s.source: s.jpg for s in read_dataset(tmp_path / "out")} == files
    assert "baseline" not in read_manifest(tmp_path / "out" / "fastpack.json").build


def test_a_progressive_file_that_does_not_transcode_is_rejected(tmp_path: Path) -> None:
    files = mixed_folder(tmp_path / "src")
    broken = truncated_scan(files["a/0_progressive.jpg"])
    (tmp_path / "src/a/0_progressive.jpg").write_bytes(broken)
    out = tmp_path / "out"
    summary = build(tmp_path / "src", out, BuildOptions(workers=1, baseline=True, **QUIET))
    assert (summary.samples, summary.rejected) == (len(files) - 1, 1)
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert rejects == [
        {
            "path": "a/0_progressive.jpg",
            "reason": "progressive JPEG not transcoded to baseline: Corrupt JPEG data: premature "
            "end of data segment",
        }
    ]
    assert {s.source for s in read_dataset(out)} == files.keys() - {"a/0_progressive.jpg"}
    with pytest.raises(BuildError, match=r"a/0_progressive\.jpg: progressive JPEG not trans"):
        build(
            tmp_path / "src",
            tmp_path / "strict",
            BuildOptions(workers=1, baseline=True, strict=True, **QUIET),
        )


def test_a_resume_must_keep_the_option(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    build(tmp_path / "src", out, BuildOptions(workers=1, baseline=True, **QUIET))
    for options, message in (
        (BuildOptions(resume=True, **QUIET), "baseline=True (now None)"),
        (BuildOptions(resume=True, baseline=True, **QUIET), None),
    ):
        if message is None:
            assert build(tmp_path / "src", out, options).samples == 12
        else:
            with pytest.raises(BuildError, match=re.escape(message)):
                build(tmp_path / "src", out, options)
    plain = tmp_path / "plain"
    build(tmp_path / "src", plain, BuildOptions(workers=1, **QUIET))
    with pytest.raises(BuildError, match=re.escape("baseline=None (now True)")):
        build(tmp_path / "src", plain, BuildOptions(resume=True, baseline=True, **QUIET))


def test_the_option_is_refused_before_any_work_without_the_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(baseline, "_EXTENSION", None)
    with pytest.raises(BaselineUnavailableError, match="libjpeg62-turbo-dev") as refused:
        BuildOptions(baseline=True)
    assert isinstance(refused.value, BuildError)
    assert "fastpack.compiler.images._jpeg_baseline" in str(refused.value)
    BuildOptions()  # the default needs nothing
