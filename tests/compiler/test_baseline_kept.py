"""`--baseline` is lossless or it refuses: a progressive JPEG whose transcode would not decode to
its pixels (an incomplete progressive file) is stored as it was and named in the build's
summary, or rejected by a strict build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.images import TranscodeNotLosslessError, to_baseline_lossless
from fastpack.formats import read_manifest
from fastpack.reader import Dataset

from fastpack.cli import main
from tests.compiler._helpers import QUIET
from tests.compiler.images._progressive import encode, load_transcoder, textured
from tests.conftest import jpeg_bytes
from tests.crafted_jpeg import split_scans

load_transcoder()  # skips this module where the transcoder is not built

COMPLETE = encode(textured(64, 96, 1))
_HEAD, _SCANS, _TAIL = split_scans(encode(textured(64, 96, 2)))
INCOMPLETE = _HEAD + b"".join(_SCANS[:-1]) + _TAIL  # the last scan dropped
NOTE = (
    "kept as it was, not transcoded to baseline: the baseline transcode would change pixels: "
    "incomplete progressive JPEG: coefficient 1 (zigzag order) of component 1 of 3 was never "
    "refined: its last 1 bit(s) are missing"
)


def source(root: Path) -> Path:
    (root / "a").mkdir(parents=True)
    (root / "a" / "0_complete.jpg").write_bytes(COMPLETE)
    (root / "a" / "1_incomplete.jpg").write_bytes(INCOMPLETE)
    (root / "a" / "2_baseline.jpg").write_bytes(jpeg_bytes(40, 56))
    return root


def stored(out: Path) -> dict[str, bytes]:
    with Dataset(out) as ds:
        return {ds.source(i): bytes(ds.read_bytes(i)) for i in range(len(ds))}


def test_the_incomplete_file_is_what_the_transcoder_refuses() -> None:
    with pytest.raises(TranscodeNotLosslessError, match=r"incomplete progressive JPEG"):
        to_baseline_lossless(INCOMPLETE)


def test_a_file_that_would_change_is_stored_as_it_was_and_named(tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = build(source(tmp_path / "src"), out, BuildOptions(baseline=True, **QUIET))
    files = stored(out)
    assert files["a/1_incomplete.jpg"] == INCOMPLETE  # byte for byte
    assert files["a/0_complete.jpg"] == to_baseline_lossless(COMPLETE)
    assert (summary.samples, summary.rejected, summary.not_transcoded) == (3, 0, 1)
    assert summary.kept == (("a/1_incomplete.jpg", NOTE),)
    assert summary.format().splitlines()[2:] == [
        "1 progressive JPEG stored as it was, not transcoded to baseline: the transcode would "
        "change pixels:",
        f"  a/1_incomplete.jpg: {NOTE}",
    ]
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.stats["not_transcoded"] == 1
    assert manifest.stats["rejected"] == 0
    assert not (out / "rejects.jsonl").exists()
    # a build without --baseline records no such count
    plain = tmp_path / "plain"
    build(tmp_path / "src", plain, BuildOptions(**QUIET))
    assert "not_transcoded" not in read_manifest(plain / "fastpack.json").stats


def test_the_cli_prints_the_kept_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = source(tmp_path / "src"), tmp_path / "out"
    assert main(["build", str(src), str(out), "--baseline", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"  a/1_incomplete.jpg: {NOTE}\n" in printed
    # a second call finds the finished dataset: its count, from the manifest
    assert main(["build", str(src), str(out), "--baseline", "--resume", "--no-progress"]) == 0
    assert (
        "1 progressive JPEG stored as it was, not transcoded to baseline: the transcode would "
        "change pixels (stats.not_transcoded in the manifest)"
    ) in capsys.readouterr().out


def test_a_strict_build_rejects_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(BuildError) as refused:
        build(source(tmp_path / "src"), out, BuildOptions(baseline=True, strict=True, **QUIET))
    assert str(refused.value) == f"a/1_incomplete.jpg: {NOTE} (a strict build stops at a reject)"


def test_a_jpeg_field_kept_as_it_was_is_noted_too(tmp_path: Path) -> None:
    """A list source whose sample has a second jpeg field: its note names the field."""
    src = source(tmp_path / "src")
    rows = [
        {"image": "a/2_baseline.jpg", "label": 0, "thumb": "a/1_incomplete.jpg"},
        {"image": "a/0_complete.jpg", "label": 1, "thumb": "a/0_complete.jpg"},
    ]
    listing = src / "list.jsonl"
    listing.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "fields": [
                    {"name": "jpg", "type": "jpeg", "column": "image"},
                    {"name": "cls", "type": "class", "column": "label"},
                    {"name": "thumb.jpg", "type": "jpeg", "column": "thumb"},
                ]
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    args = ["build", str(listing), str(out), "--baseline", "--schema", str(schema)]
    assert main([*args, "--no-progress"]) == 0
    with Dataset(out, fields=("thumb.jpg",)) as ds:
        assert bytes(ds.read_bytes(0, "thumb.jpg")) == INCOMPLETE
    assert read_manifest(out / "fastpack.json").stats["not_transcoded"] == 1
