"""The baseline transcoder (the `_jpeg_baseline` extension): progressive JPEGs come out as one
sequential scan of the same coefficients, so they decode to the same pixels, across
subsamplings, restart intervals, grey, sizes that are not a multiple of the MCU; APPn and COM
segments are kept; damaged input is a ValueError; and the image policy uses it with `baseline`."""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator

import numpy as np
import pytest
import simplejpeg
from fastpack.compiler.images import (
    CHECKS,
    BaselineUnavailableError,
    Check,
    PreparedImage,
    Reject,
    baseline,
    prepare_image,
)
from fastpack.compiler.images.jpeg_structure import read_jpeg_structure

from tests.compiler._helpers import exif_app1

from ._progressive import SAMPLINGS, encode, load_transcoder, textured, truncated_scan

extension = load_transcoder()
SIZES = [(77, 131), (45, 17), (16, 16), (9, 200)]
BASELINE_FRAMES = (0xC0, 0xC1)


def variants() -> Iterator[tuple[str, bytes]]:
    for i, (h, w) in enumerate(SIZES):
        image = textured(h, w, i)
        for sampling in SAMPLINGS:
            yield f"{sampling} {h}x{w}", encode(image, sampling)
        yield f"grey {h}x{w}", encode(image, grey=True)
        yield f"4:2:0 restart 1 {h}x{w}", encode(image, restart=1)
        yield f"4:2:2 restart 3 {h}x{w}", encode(image, "4:2:2", restart=3)
        yield f"grey restart 2 {h}x{w}", encode(image, grey=True, restart=2)
        yield f"4:4:4 quality 100 {h}x{w}", encode(image, "4:4:4", quality=100)
        yield f"4:2:0 baseline input {h}x{w}", encode(image, progressive=False)


VARIANTS = dict(variants())


def frame_marker(data: bytes) -> int:
    return read_jpeg_structure(data).frame.marker


def pixels(data: bytes) -> np.ndarray:
    _, _, colorspace, _ = simplejpeg.decode_jpeg_header(data)
    out: np.ndarray = simplejpeg.decode_jpeg(
        data, colorspace="GRAY" if colorspace == "Gray" else "RGB", strict=True
    )
    return out


def segments(data: bytes, codes: range | tuple[int, ...]) -> list[bytes]:
    """The marker segments with these codes before the first scan, whole and in order."""
    found, pos = [], 2
    while data[pos + 1] != 0xDA:
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if data[pos + 1] in codes:
            found.append(data[pos : pos + 2 + length])
        pos += 2 + length
    return found


def segment(code: int, payload: bytes) -> bytes:
    return bytes([0xFF, code]) + struct.pack(">H", len(payload) + 2) + payload


APPN_COM = (*range(0xE0, 0xF0), 0xFE)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_transcode_is_baseline_with_the_same_pixels(name: str) -> None:
    data = VARIANTS[name]
    out = extension.to_baseline(data)
    assert isinstance(out, bytes)
    assert frame_marker(out) in BASELINE_FRAMES
    assert read_jpeg_structure(out).scans == 1
    assert simplejpeg.decode_jpeg_header(out) == simplejpeg.decode_jpeg_header(data)
    np.testing.assert_array_equal(pixels(out), pixels(data))


def test_a_progressive_input_has_several_scans_and_its_transcode_one() -> None:
    data = VARIANTS["4:2:0 77x131"]
    assert frame_marker(data) == 0xC2
    assert read_jpeg_structure(data).scans > 1
    assert read_jpeg_structure(extension.to_baseline(data)).scans == 1


def test_the_transcode_is_deterministic_and_a_fixed_point() -> None:
    data = VARIANTS["4:2:2 restart 3 77x131"]
    once = extension.to_baseline(data)
    assert extension.to_baseline(data) == once
    assert extension.to_baseline(once) == once


def test_appn_and_com_segments_are_kept_byte_for_byte_in_order() -> None:
    data = VARIANTS["4:2:0 77x131"]
    icc = [segment(0xE2, b"ICC_PROFILE\x00" + bytes([k, 2]) + bytes(range(200))) for k in (1, 2)]
    xmp = segment(0xE1, b"http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta/>")
    comment = segment(0xFE, b"made by a camera")
    extra = exif_app1(1) + icc[0] + icc[1] + xmp + comment
    soi_jfif = data[: 2 + 2 + int.from_bytes(data[4:6], "big")]
    tagged = soi_jfif + extra + data[len(soi_jfif) :]
    out = extension.to_baseline(tagged)
    assert segments(out, APPN_COM) == segments(tagged, APPN_COM)
    assert segments(out, APPN_COM)[0].startswith(b"\xff\xe0\x00\x10JFIF\x00")
    np.testing.assert_array_equal(pixels(out), pixels(data))


def test_no_jfif_segment_is_added_where_the_input_has_none() -> None:
    data = VARIANTS["4:4:4 77x131"]
    jfif_end = 2 + 2 + int.from_bytes(data[4:6], "big")
    exif_first = data[:2] + exif_app1(1) + data[jfif_end:]  # as cameras write them
    out = extension.to_baseline(exif_first)
    assert out[2:4] == b"\xff\xe1"
    assert segments(out, APPN_COM) == [exif_app1(1)]
    np.testing.assert_array_equal(pixels(out), pixels(data))


def test_bytes_after_the_eoi_are_dropped() -> None:
    data = VARIANTS["4:2:0 45x17"]
    assert extension.to_baseline(data + b"camera trailer") == extension.to_baseline(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty data: not a JPEG"),
        (b"GIF89a, not a JPEG", "Not a JPEG file: starts with 0x47 0x49"),
        (VARIANTS["4:2:0 77x131"][:300], "Premature end of JPEG file"),
        (truncated_scan(VARIANTS["4:2:0 77x131"]), "Corrupt JPEG data: premature end of data"),
    ],
    ids=["empty", "not-a-jpeg", "truncated", "scan-cut-short"],
)
def test_damaged_input_is_a_value_error_with_libjpegs_message(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        extension.to_baseline(data)


def test_it_takes_any_bytes_like_object() -> None:
    data = VARIANTS["grey 16x16"]
    assert extension.to_baseline(memoryview(data)) == extension.to_baseline(data)
    assert extension.to_baseline(bytearray(data)) == extension.to_baseline(data)


def test_it_releases_the_gil() -> None:
    big = encode(textured(2000, 2000, 7), "4:4:4")
    started, done = threading.Event(), threading.Event()

    def transcode() -> None:
        started.set()
        for _ in range(2):
            extension.to_baseline(big)
        done.set()

    thread = threading.Thread(target=transcode)
    thread.start()
    started.wait()
    spins = 0
    while not done.is_set():
        spins += 1
    thread.join()
    # Holding the GIL, two transcodes of 4 MP would let this loop run only between them.
    assert spins > 10_000


def test_the_policy_transcodes_progressive_jpegs_only_with_baseline() -> None:
    progressive = VARIANTS["4:2:0 77x131"]
    result = prepare_image(progressive, baseline=True)
    assert isinstance(result, PreparedImage)
    assert result == PreparedImage(extension.to_baseline(progressive), converted=False)
    assert result.size == result.upright_size == (77, 131)
    assert prepare_image(progressive) == PreparedImage(progressive, converted=False)


def test_the_policy_keeps_baseline_jpegs_as_they_are() -> None:
    data = VARIANTS["4:2:0 baseline input 77x131"]
    assert frame_marker(data) == 0xC0
    for check in CHECKS:
        assert prepare_image(data, baseline=True, check=check) == PreparedImage(data, False)


def test_progressive_jpegs_the_policy_converts_are_reencoded_as_before() -> None:
    """Grey (and too large) progressive JPEGs go down the re-encode path: `baseline` changes
    nothing there."""
    grey = VARIANTS["grey 77x131"]
    for data, max_side in ((grey, None), (VARIANTS["4:2:0 77x131"], 64)):
        with_baseline = prepare_image(data, baseline=True, max_side=max_side)
        assert isinstance(with_baseline, PreparedImage)
        assert with_baseline.converted
        assert with_baseline == prepare_image(data, max_side=max_side)


@pytest.mark.parametrize("check", CHECKS)
def test_a_progressive_jpeg_that_does_not_transcode_is_rejected(check: Check) -> None:
    data = truncated_scan(VARIANTS["4:2:0 77x131"])
    assert prepare_image(data, check="structure") == PreparedImage(data, converted=False)
    result = prepare_image(data, baseline=True, check=check)
    assert result == Reject(
        "progressive JPEG not transcoded to baseline: Corrupt JPEG data: premature end of data "
        "segment"
    )


def test_without_the_extension_baseline_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline, "_EXTENSION", None)
    assert not baseline.baseline_available()
    with pytest.raises(BaselineUnavailableError, match="libjpeg62-turbo-dev") as refused:
        prepare_image(VARIANTS["4:2:0 77x131"], baseline=True)
    assert "fastpack.compiler.images._jpeg_baseline" in str(refused.value)
    assert "reinstall fastpack" in str(refused.value)
    # a baseline input needs no transcode, and the option is off by default
    plain = VARIANTS["4:2:0 baseline input 77x131"]
    assert prepare_image(plain, baseline=True) == PreparedImage(plain, converted=False)
    assert prepare_image(VARIANTS["4:2:0 77x131"]) == PreparedImage(
        VARIANTS["4:2:0 77x131"], converted=False
    )
