"""The baseline transcoder on hostile input: an error after the output has grown is a
ValueError (its buffer is freed once), memory and scan counts are bounded, incomplete
progressive files are refused, and `to_baseline_lossless` refuses any transcode whose pixels
differ from the original's."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import simplejpeg
from fastpack.compiler.errors import BuildError
from fastpack.compiler.images import TranscodeNotLosslessError, baseline, to_baseline_lossless
from fastpack.formats.errors import FastpackError

from tests._child import assert_refused_in_a_child, run_python
from tests.crafted_jpeg import (
    complete_script,
    dc_out_of_range,
    first_scans,
    progressive_grey,
    split_scans,
    without_scan,
)

from ._progressive import encode, load_transcoder, textured

extension = load_transcoder()
IMAGE = textured(77, 131, 3)
PROGRESSIVE = encode(IMAGE)  # libjpeg's default script: 10 scans


def transcode_in_a_child(data: bytes) -> subprocess.CompletedProcess[bytes]:
    """`to_baseline(data)` in a fresh interpreter, which prints the ValueError's message: a
    crash is a signal (a negative return code), not a failed test in this process."""
    code = (
        "import sys\n"
        "from fastpack.compiler.images import _jpeg_baseline\n"
        "try:\n"
        "    _jpeg_baseline.to_baseline(sys.stdin.buffer.read())\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n"
    )
    return run_python(code, data)


@pytest.mark.parametrize("markers", [0, 40_000], ids=["small-output", "grown-output"])
def test_an_encoder_error_after_the_output_grew_is_a_value_error(markers: int) -> None:
    """With libjpeg's memory destination, an error after the output passed 4 KiB freed its
    first buffer a second time (an abort): the output buffer is now the extension's own."""
    data = dc_out_of_range(markers)
    assert simplejpeg.decode_jpeg(data, colorspace="GRAY", strict=True).shape == (8, 8, 1)
    child = transcode_in_a_child(data)
    assert child.returncode == 0, f"the transcode died: {child.returncode} {child.stderr!r}"
    assert child.stdout == b"ValueError: DCT coefficient out of range\n"


def test_the_same_file_in_process_keeps_raising_the_same_error() -> None:
    data = dc_out_of_range(40_000)
    for _ in range(20):
        with pytest.raises(ValueError, match=r"^DCT coefficient out of range$"):
            extension.to_baseline(data)


def test_outputs_larger_than_the_first_buffer_are_whole() -> None:
    """300 KB of comments: the output buffer grows many times over."""
    data = progressive_grey(64, 64, complete_script(10))
    head = data[:2] + b"".join(
        bytes([0xFF, 0xFE]) + (2 + 60_000).to_bytes(2, "big") + bytes([i]) * 60_000
        for i in range(5)
    )
    tagged = head + data[2:]
    out = extension.to_baseline(tagged)
    assert out[: len(head)] == head
    np.testing.assert_array_equal(
        simplejpeg.decode_jpeg(out, colorspace="GRAY"),
        simplejpeg.decode_jpeg(data, colorspace="GRAY"),
    )


def test_the_coefficients_memory_is_limited_before_it_is_allocated() -> None:
    # 4096 x 4096 grey: 262,144 blocks of 128 bytes, 32 MiB of coefficients
    data = progressive_grey(4096, 4096, complete_script(2))
    assert len(data) < 40_000
    with pytest.raises(
        ValueError,
        match=r"^the image's coefficients need more than the memory limit of 8388608 bytes "
        r"\(max_memory\)$",
    ):
        extension.to_baseline(data, max_memory=8 << 20)
    out = extension.to_baseline(data)  # the default: 1 GiB
    assert simplejpeg.decode_jpeg_header(out)[:2] == (4096, 4096)
    assert extension.DEFAULT_MAX_MEMORY == 1 << 30


def test_a_huge_progressive_header_is_refused_before_its_memory_is_touched() -> None:
    """32768 x 32768 grey in a 2 MB file: 2 GiB of coefficients, over the 1 GiB default."""
    assert_refused_in_a_child(
        "from fastpack.compiler.images import _jpeg_baseline",
        "_jpeg_baseline.to_baseline(data)",
        progressive_grey(32768, 32768, complete_script(2)),
        message=(
            "the image's coefficients need more than the memory limit of 1073741824 bytes "
            "(max_memory)"
        ),
        grown_kib_below=64 * 1024,
    )


def test_the_output_obeys_the_memory_limit() -> None:
    data = progressive_grey(8, 8, complete_script(2))
    tagged = (
        data[:2]
        + b"".join(
            bytes([0xFF, 0xFE]) + (2 + 50_000).to_bytes(2, "big") + b"x" * 50_000 for _ in range(4)
        )
        + data[2:]
    )
    with pytest.raises(
        ValueError,
        match=r"^the baseline output needs more than the memory limit of 150000 bytes",
    ):
        extension.to_baseline(tagged, max_memory=150_000)
    assert len(extension.to_baseline(tagged)) > 200_000


def test_more_than_500_scans_are_refused() -> None:
    assert extension.DEFAULT_MAX_SCANS == 500
    at_limit = progressive_grey(64, 64, complete_script(500))
    assert len(extension.to_baseline(at_limit)) < 1000
    over = progressive_grey(64, 64, complete_script(501))
    with pytest.raises(ValueError, match=r"^the JPEG has more than 500 scans \(max_scans\)$"):
        extension.to_baseline(over)
    with pytest.raises(ValueError, match="more than 9 scans"):
        extension.to_baseline(PROGRESSIVE, max_scans=9)
    assert extension.to_baseline(PROGRESSIVE, max_scans=10)


@pytest.mark.parametrize(
    ("keyword", "value", "message"),
    [
        ("max_memory", 0, "max_memory must be 1 to 9223372036854775807, got 0"),
        ("max_memory", 1 << 100, "max_memory must be 1 to 9223372036854775807, got 1267650"),
        ("max_scans", -1, "max_scans must be 1 to 2147483647, got -1"),
        ("max_scans", 1 << 40, "max_scans must be 1 to 2147483647, got 1099511627776"),
    ],
)
def test_limits_out_of_range_are_value_errors(keyword: str, value: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        extension.to_baseline(PROGRESSIVE, **{keyword: value})
    with pytest.raises(TypeError):
        extension.to_baseline(PROGRESSIVE, **{keyword: 1.5})


def max_difference(a: bytes, b: bytes) -> int:
    pa = simplejpeg.decode_jpeg(a, colorspace="RGB").astype(np.int16)
    pb = simplejpeg.decode_jpeg(b, colorspace="RGB").astype(np.int16)
    return int(np.abs(pa - pb).max())


NEVER_REFINED = "was never refined: its last 1 bit(s) are missing"
INCOMPLETE = {
    # libjpeg's script: DC at 1 bit less, Y AC1-5, Cr, Cb, Y AC6-63 at reduced precision, then
    # the refinements: Y AC1-63, DC, Cr, Cb, Y AC1-63
    "EOI after the first scan": (
        first_scans(PROGRESSIVE, 1),
        f"coefficient 0 (zigzag order) of component 1 of 3 {NEVER_REFINED}",
    ),
    "EOI after 6 scans": (
        first_scans(PROGRESSIVE, 6),
        f"coefficient 0 (zigzag order) of component 1 of 3 {NEVER_REFINED}",
    ),
    "the Cr refinement dropped": (
        without_scan(PROGRESSIVE, 7),
        f"coefficient 1 (zigzag order) of component 3 of 3 {NEVER_REFINED}",
    ),
    "the last scan dropped": (
        without_scan(PROGRESSIVE, 9),
        f"coefficient 1 (zigzag order) of component 1 of 3 {NEVER_REFINED}",
    ),
    "crafted: AC 32-63 never sent": (
        progressive_grey(64, 64, complete_script(3)[:2]),
        "coefficient 32 (zigzag order) of component 1 of 1 was never sent",
    ),
}


@pytest.mark.parametrize("name", list(INCOMPLETE))
def test_incomplete_progressive_files_are_refused(name: str) -> None:
    data, reason = INCOMPLETE[name]
    simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True)  # a decoder takes them
    with pytest.raises(extension.IncompleteProgressiveError) as refused:
        extension.to_baseline(data)
    assert str(refused.value) == f"incomplete progressive JPEG: {reason}"
    assert isinstance(refused.value, ValueError)


def test_a_complete_progressive_file_transcodes_to_identical_pixels() -> None:
    out = extension.to_baseline(PROGRESSIVE)
    assert max_difference(out, PROGRESSIVE) == 0
    assert len(split_scans(PROGRESSIVE)[1]) == 10
    assert len(split_scans(out)[1]) == 1


def test_lossless_transcode_returns_the_transcode() -> None:
    assert to_baseline_lossless(PROGRESSIVE) == extension.to_baseline(PROGRESSIVE)
    grey = encode(textured(45, 17, 4), grey=True)
    assert to_baseline_lossless(grey) == extension.to_baseline(grey)


def test_lossless_transcode_refuses_incomplete_files_with_the_reason() -> None:
    data, reason = INCOMPLETE["the last scan dropped"]
    with pytest.raises(TranscodeNotLosslessError) as refused:
        to_baseline_lossless(data)
    assert str(refused.value) == (
        f"the baseline transcode would change pixels: incomplete progressive JPEG: {reason}"
    )
    assert isinstance(refused.value, BuildError)
    assert isinstance(refused.value, FastpackError)
    assert isinstance(refused.value, ValueError)


def test_pixels_that_differ_are_refused_with_the_largest_difference() -> None:
    """The comparison behind `to_baseline_lossless`, given a transcode that is not the same
    image: the same picture encoded at another quality."""
    cut = extension.to_baseline(encode(IMAGE, quality=50))
    difference = max_difference(cut, PROGRESSIVE)
    assert difference > 0
    with pytest.raises(TranscodeNotLosslessError) as refused:
        baseline.require_same_pixels(PROGRESSIVE, cut)
    assert str(refused.value) == (
        "the baseline transcode would change pixels: it decodes up to "
        f"{difference} levels away from the original"
    )
    baseline.require_same_pixels(PROGRESSIVE, extension.to_baseline(PROGRESSIVE))


def test_a_transcode_of_another_size_is_refused() -> None:
    other = extension.to_baseline(encode(textured(76, 131, 3)))
    with pytest.raises(
        TranscodeNotLosslessError, match=r"it decodes to 76x131x3 pixels, the original to 77x131x3"
    ):
        baseline.require_same_pixels(PROGRESSIVE, other)


def test_lossless_transcode_keeps_damaged_input_a_plain_value_error() -> None:
    with pytest.raises(ValueError, match="Not a JPEG file") as refused:
        to_baseline_lossless(b"GIF89a, not a JPEG")
    assert not isinstance(refused.value, TranscodeNotLosslessError)
