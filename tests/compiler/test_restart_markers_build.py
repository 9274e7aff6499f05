"""`restart_width`: a build stores every JPEG, progressive or not, and every JPEG it encodes
itself, transcoded losslessly with restart markers that split each MCU row into intervals
about that wide (the same pixels); the reader's window decode then decodes only the intervals
around a crop; the option is recorded, checked on resume, taken over by an append, refused out
of range and where the transcoder is not built."""

from __future__ import annotations

import json
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


def mcu_width(data: bytes) -> int:
    return 8 if simplejpeg.decode_jpeg_header(data)[3] == "444" else 16


def mcus_per_row(data: bytes) -> int:
    return -(-int(simplejpeg.decode_jpeg_header(data)[1]) // mcu_width(data))


def expected_interval(data: bytes, width: int) -> int:
    """The widest interval that splits a row evenly within `width` px, or a whole row where
    that would be under half of `width`."""
    per_row, mcu = mcus_per_row(data), mcu_width(data)
    fits = [n for n in range(1, per_row + 1) if per_row % n == 0 and n * mcu <= width]
    best = max(fits, default=0)
    return per_row if best * mcu * 2 < width else best


@pytest.mark.parametrize("width", [64, 128, 65535])
def test_every_jpeg_is_stored_with_markers_and_the_same_pixels(tmp_path: Path, width: int) -> None:
    files = mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    summary = build(tmp_path / "src", out, BuildOptions(workers=2, restart_width=width, **QUIET))
    assert (summary.samples, summary.rejected, summary.converted) == (len(files), 0, 2)
    stored = {s.source: s.jpg for s in read_dataset(out)}
    assert stored.keys() == files.keys()
    for path, original in files.items():
        member = stored[path]
        assert read_jpeg_structure(member).frame.marker in (0xC0, 0xC1), path
        assert restart_interval(member) == expected_interval(member, width), path
        if not path.endswith(".png"):
            np.testing.assert_array_equal(
                simplejpeg.decode_jpeg(member), simplejpeg.decode_jpeg(original), err_msg=path
            )
    assert read_manifest(out / "fastpack.json").build["restart_width"] == width


def test_the_interval_splits_a_row_evenly_or_is_a_row() -> None:
    cases = (
        (190, {64: 4, 128: 6, 65535: 12}),  # 12 MCUs a row
        (333, {64: 3, 128: 7, 200: 7}),  # 21
        (368, {16: 1, 128: 23}),  # 23, a prime: a whole row rather than 16 px intervals
    )
    for width, expected in cases:
        data = encode(textured(40, width, 1), "4:2:0", progressive=False)
        for target, interval in expected.items():
            assert restart_interval(extension.to_baseline(data, restart_width=target)) == interval


def test_a_converted_image_has_the_pixels_it_has_without_markers(tmp_path: Path) -> None:
    files = mixed_folder(tmp_path / "src")
    build(tmp_path / "src", tmp_path / "plain", BuildOptions(workers=1, **QUIET))
    marked = tmp_path / "marked"
    build(tmp_path / "src", marked, BuildOptions(workers=1, restart_width=128, **QUIET))
    plain = {s.source: s.jpg for s in read_dataset(tmp_path / "plain")}
    with_markers = {s.source: s.jpg for s in read_dataset(marked)}
    for path in files:
        np.testing.assert_array_equal(
            simplejpeg.decode_jpeg(with_markers[path]), simplejpeg.decode_jpeg(plain[path]), path
        )
        assert restart_interval(plain[path]) == 0


def test_a_stored_member_is_cut_to_the_crop_by_the_reader(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "src")
    build(tmp_path / "src", tmp_path / "out", BuildOptions(workers=1, restart_width=64, **QUIET))
    stored = {s.source: s.jpg for s in read_dataset(tmp_path / "out")}
    member = stored["a/0_baseline.jpg"]  # 260 x 190, 4:2:0: 12 MCUs a row, intervals of 4
    assert restart_interval(member) == 4
    buffer = np.empty(260 * 200 * 3, np.uint8)
    *_, cut = window_decoder.decode_window(member, 0, 200, 140, 60, 50, buffer)
    # MCU rows from 11 (the window's row 199 is in row 12, 11 is context); MCU columns from 7
    # (column 139 is in 8, 7 is context), in intervals of 4 MCUs: from the second, at 64 px
    assert tuple(cut) == (176, 64)
    whole = simplejpeg.decode_jpeg(member)
    got = decode_window(member, (260, 190), 0, (200, 140, 260, 190), DecodeOptions())
    np.testing.assert_array_equal(got, whole[200:, 140:])


def test_a_resume_must_keep_the_option(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    build(tmp_path / "src", out, BuildOptions(workers=1, restart_width=128, **QUIET))
    with pytest.raises(BuildError, match=re.escape("restart_width=128 (now None)")):
        build(tmp_path / "src", out, BuildOptions(resume=True, **QUIET))
    with pytest.raises(BuildError, match=re.escape("restart_width=128 (now 64)")):
        build(tmp_path / "src", out, BuildOptions(resume=True, restart_width=64, **QUIET))
    done = build(tmp_path / "src", out, BuildOptions(resume=True, restart_width=128, **QUIET))
    assert done.samples == 14


@pytest.mark.parametrize("width", [-1, 65536, 1.5, True])
def test_a_width_out_of_range_is_refused(width: object) -> None:
    with pytest.raises(BuildError, match=r"build option restart_width=.*an int in 0\.\.65535"):
        BuildOptions(restart_width=width)  # type: ignore[arg-type]


def test_the_option_is_refused_before_any_work_without_the_extension(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(baseline, "_EXTENSION", None)
    with pytest.raises(BaselineUnavailableError, match="--restart-markers"):
        BuildOptions(restart_width=128)
    BuildOptions()  # the default needs nothing


def test_the_transcoder_refuses_a_width_out_of_range() -> None:
    data = encode(textured(40, 40, 1), "4:2:0", progressive=False)
    for width in (-1, 65536):
        with pytest.raises(ValueError, match=f"restart_width must be 0 to 65535, got {width}"):
            extension.to_baseline(data, restart_width=width)


def test_an_append_stores_its_jpegs_with_the_datasets_markers(tmp_path: Path) -> None:
    mixed_folder(tmp_path / "src")
    out = tmp_path / "out"
    build(tmp_path / "src", out, BuildOptions(workers=1, restart_width=64, **QUIET))
    more = tmp_path / "more" / "c"
    more.mkdir(parents=True)
    (more / "new.jpg").write_bytes(encode(textured(150, 100, 40), "4:2:0", progressive=False))
    summary = append(out, tmp_path / "more", BuildOptions(workers=1, **QUIET))
    assert summary.added.samples == 1
    stored = {s.source: s.jpg for s in read_dataset(out)}
    assert restart_interval(stored["c/new.jpg"]) == expected_interval(stored["c/new.jpg"], 64)
    assert read_manifest(out / "fastpack.json").build["restart_width"] == 64


def test_a_sequential_file_the_transcoder_cannot_read_is_a_named_reject(tmp_path: Path) -> None:
    files = mixed_folder(tmp_path / "src")
    whole = files["a/0_baseline.jpg"]
    scan = whole.index(b"\xff\xda")
    broken = whole[: scan + (len(whole) - scan) // 2] + b"\xff\xd9"  # half its scan, then EOI
    (tmp_path / "src/a/0_baseline.jpg").write_bytes(broken)
    out = tmp_path / "out"
    summary = build(tmp_path / "src", out, BuildOptions(workers=1, restart_width=64, **QUIET))
    assert (summary.samples, summary.rejected) == (len(files) - 1, 1)
    (reject,) = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert reject["path"] == "a/0_baseline.jpg"
    assert reject["reason"].startswith("JPEG not transcoded with restart markers: ")
    # without the option the same file passes the default structure check, as stored bytes
    plain = build(tmp_path / "src", tmp_path / "plain", BuildOptions(workers=1, **QUIET))
    assert plain.rejected == 0
