"""`restart_rows`: a build stores every JPEG, progressive or not, and every JPEG it encodes
itself, transcoded losslessly with a restart marker every N MCU rows (the same pixels); the
reader's window decode then starts at a marker above the crop; the option is recorded, checked
on resume, taken over by an append, refused out of range and where the transcoder is not
built."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
import pytest
import simplejpeg
from fastpack.compiler import BuildError, BuildOptions, append, build
from fastpack.compiler.images import BaselineUnavailableError, baseline
from fastpack.compiler.images.jpeg_structure import read_jpeg_structure
from fastpack.formats import read_manifest
from fastpack.reader.image.crop_decode import decode_window
from fastpack.reader.image.decode import DecodeOptions

from tests.compiler._helpers import QUIET, read_dataset
from tests.compiler.images._progressive import encode, load_transcoder, textured
from tests.reader.image._window import load_window_decoder

extension = load_transcoder()
window_decoder = load_window_decoder()

SIZES = [(260, 190), (97, 333), (120, 64)]


def mixed_folder(root: Path) -> dict[str, bytes]:
    """Progressive and baseline JPEGs, a PNG (converted) and a grey JPEG (converted): their
    bytes by relative path."""
    files = {}
    for c, name in enumerate(("a", "b")):
        (root / name).mkdir(parents=True)
        for i, (h, w) in enumerate(SIZES):
            image = textured(h, w, 10 * c + i)
            sampling = ("4:2:0", "4:2:2", "4:4:4")[i]
            files[f"{name}/{i}_progressive.jpg"] = encode(image, sampling)
            files[f"{name}/{i}_baseline.jpg"] = encode(image, sampling, progressive=False)
        ok, png = cv2.imencode(".png", textured(70, 90, c))
        assert ok
        files[f"{name}/converted.png"] = png.tobytes()
    for path, data in files.items():
        (root / path).write_bytes(data)
    return files


def restart_interval(data: bytes) -> int:
    """The DRI segment's interval in MCUs (0: none before the first scan)."""
    at = data.find(b"\xff\xdd", 0, data.index(b"\xff\xda"))
    return 0 if at < 0 else int.from_bytes(data[at + 4 : at + 6], "big")


def mcus_per_row(data: bytes) -> int:
    _, width, _, subsampling = simplejpeg.decode_jpeg_header(data)
    mcu_width = 8 if subsampling == "444" else 16
    return int(-(-width // mcu_width))


@pytest.mark.parametrize("rows", [1, 3])
def test_every_jpeg_is_stored_with_markers_and_the_same_pixels(tmp_path: Path, rows: int) -> None:
    files = mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    summary = build(tmp_path / "src", out, BuildOptions(workers=2, restart_rows=rows, **QUIET))
    assert (summary.samples, summary.rejected, summary.converted) == (len(files), 0, 2)
    stored = {s.source: s.jpg for s in read_dataset(out)}
    assert stored.keys() == files.keys()
    for path, original in files.items():
        member = stored[path]
        assert read_jpeg_structure(member).frame.marker in (0xC0, 0xC1), path
        assert restart_interval(member) == rows * mcus_per_row(member), path
        if not path.endswith(".png"):
            np.testing.assert_array_equal(
                simplejpeg.decode_jpeg(member), simplejpeg.decode_jpeg(original), err_msg=path
            )
    assert read_manifest(out / "fastpack.json").build["restart_rows"] == rows


def test_a_converted_image_has_the_pixels_it_has_without_markers(tmp_path: Path) -> None:
    files = mixed_folder(tmp_path / "src")
    build(tmp_path / "src", tmp_path / "plain", BuildOptions(workers=1, **QUIET))
    build(tmp_path / "src", tmp_path / "marked", BuildOptions(workers=1, restart_rows=1, **QUIET))
    plain = {s.source: s.jpg for s in read_dataset(tmp_path / "plain")}
    marked = {s.source: s.jpg for s in read_dataset(tmp_path / "marked")}
    for path in files:
        np.testing.assert_array_equal(
            simplejpeg.decode_jpeg(marked[path]), simplejpeg.decode_jpeg(plain[path]), path
        )
        assert restart_interval(plain[path]) == 0


def test_a_stored_member_is_cut_at_a_marker_by_the_reader(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "src")
    build(tmp_path / "src", tmp_path / "out", BuildOptions(workers=1, restart_rows=1, **QUIET))
    stored = {s.source: s.jpg for s in read_dataset(tmp_path / "out")}
    member = stored["a/0_baseline.jpg"]  # 260 x 190, 4:2:0
    buffer = np.empty(260 * 200 * 3, np.uint8)
    *_, rows_cut = window_decoder.decode_window(member, 0, 200, 0, 60, 190, buffer)
    assert rows_cut == 176  # MCU rows 0-10: the window's row 199 is in row 12, 11 is context
    whole = simplejpeg.decode_jpeg(member)
    got = decode_window(member, (260, 190), 0, (200, 0, 260, 190), DecodeOptions())
    np.testing.assert_array_equal(got, whole[200:])


def test_a_resume_must_keep_the_option(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    build(tmp_path / "src", out, BuildOptions(workers=1, restart_rows=1, **QUIET))
    with pytest.raises(BuildError, match=re.escape("restart_rows=1 (now None)")):
        build(tmp_path / "src", out, BuildOptions(resume=True, **QUIET))
    with pytest.raises(BuildError, match=re.escape("restart_rows=1 (now 2)")):
        build(tmp_path / "src", out, BuildOptions(resume=True, restart_rows=2, **QUIET))
    done = build(tmp_path / "src", out, BuildOptions(resume=True, restart_rows=1, **QUIET))
    assert done.samples == 14


@pytest.mark.parametrize("rows", [-1, 65536, 1.5, True])
def test_an_interval_out_of_range_is_refused(rows: object) -> None:
    with pytest.raises(BuildError, match=r"build option restart_rows=.*an int in 0\.\.65535"):
        BuildOptions(restart_rows=rows)  # type: ignore[arg-type]


def test_the_option_is_refused_before_any_work_without_the_extension(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(baseline, "_EXTENSION", None)
    with pytest.raises(BaselineUnavailableError, match="--restart-rows"):
        BuildOptions(restart_rows=1)
    BuildOptions()  # the default needs nothing


def test_the_transcoder_refuses_an_interval_out_of_range() -> None:
    data = encode(textured(40, 40, 1), "4:2:0", progressive=False)
    for rows in (-1, 65536):
        with pytest.raises(ValueError, match=f"restart_rows must be 0 to 65535, got {rows}"):
            extension.to_baseline(data, restart_rows=rows)


def test_an_append_stores_its_jpegs_with_the_datasets_markers(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    build(tmp_path / "src", out, BuildOptions(workers=1, restart_rows=2, **QUIET))
    more = tmp_path / "more" / "c"
    more.mkdir(parents=True)
    (more / "new.jpg").write_bytes(encode(textured(150, 100, 40), "4:2:0", progressive=False))
    summary = append(out, tmp_path / "more", BuildOptions(workers=1, **QUIET))
    assert summary.added.samples == 1
    stored = {s.source: s.jpg for s in read_dataset(out)}
    assert restart_interval(stored["c/new.jpg"]) == 2 * mcus_per_row(stored["c/new.jpg"])
    assert read_manifest(out / "fastpack.json").build["restart_rows"] == 2
