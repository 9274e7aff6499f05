"""The reader's pixel budget and decode guard on real JPEG and PNG bytes: an image over the
budget is refused from its header before anything is decoded (the peak memory of a child
process shows it), and whatever a decoder raises is a FieldValueError."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import pytest
import simplejpeg
from fastpack.formats import FieldValueError, PixelBudgetError
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET, ImageHeaderError
from fastpack.reader.image import CenterCrop, ImageDecodeError, RandomResizedCrop, decode_png
from fastpack.reader.image.budget import resolve_budget, transform_budget
from fastpack.reader.image.crop_decode import (
    render,
    use_window_decode,
    window_decode_enabled,
)
from fastpack.reader.image.decode import DecodeOptions, decode, jpeg_size
from fastpack.reader.image.guard import guarded

from tests.conftest import jpeg_bytes, png_bytes
from tests.reader.image._hostile import (
    HUGE,
    SMALL_PEAK_MB,
    huge_claim,
    progressive_jpeg,
    run_measured,
    unnamed_sampling,
    with_frame_size,
)
from tests.reader.image._window import outcome, window_decode

DRAWS = [0.5] * RandomResizedCrop.draws
OVER_HUGE = (
    f"{HUGE} x {HUGE} pixels x 3 components = 3,221,225,472 samples, over the pixel budget of "
    "268,435,456 (pixel_budget)"
)


@pytest.fixture(params=["window", "simplejpeg"])
def decoder(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test once through the window decoder (where built) and once through the simplejpeg
    fallback that crops take without it."""
    previous = use_window_decode(request.param == "window")
    if request.param == "window" and not window_decode_enabled():
        use_window_decode(previous)
        pytest.skip("the window decoder is not built here")
    yield str(request.param)
    use_window_decode(previous)


def test_the_default_budget_is_2_to_the_28_samples() -> None:
    assert DEFAULT_PIXEL_BUDGET == 268_435_456
    assert DecodeOptions().pixel_budget == DEFAULT_PIXEL_BUDGET
    assert RandomResizedCrop(8).options.pixel_budget == DEFAULT_PIXEL_BUDGET
    assert CenterCrop(8).options.pixel_budget == DEFAULT_PIXEL_BUDGET


@pytest.mark.usefixtures("decoder")
@pytest.mark.parametrize("progressive", [False, True], ids=["baseline", "progressive"])
def test_a_budget_of_exactly_the_image_decodes_and_one_less_refuses(progressive: bool) -> None:
    data = progressive_jpeg(48, 40) if progressive else jpeg_bytes(48, 40)
    samples = 48 * 40 * 3
    for transform in (RandomResizedCrop(16, pixel_budget=samples), CenterCrop(16)):
        draws = DRAWS if transform.draws else None
        assert transform(data, draws).shape == (16, 16, 3)
    assert decode(data, DecodeOptions(pixel_budget=samples)).shape == (48, 40, 3)
    message = (
        "40 x 48 pixels x 3 components = 5,760 samples, over the pixel budget of 5,759 "
        "(pixel_budget)"
    )
    for transform in (
        RandomResizedCrop(16, pixel_budget=samples - 1),
        CenterCrop(16, pixel_budget=samples - 1),
    ):
        with pytest.raises(PixelBudgetError, match=rf"^{re.escape(message)}$"):
            transform(data, DRAWS if transform.draws else None)
    with pytest.raises(PixelBudgetError, match=rf"^{re.escape(message)}$"):
        decode(data, DecodeOptions(pixel_budget=samples - 1))
    with pytest.raises(PixelBudgetError, match=rf"^{re.escape(message)}$"):
        jpeg_size(data, samples - 1)


def test_the_simplejpeg_fallback_checks_the_budget_itself() -> None:
    """`render` given a size (as a transform gives it) still refuses in the fallback."""
    previous = use_window_decode(False)
    try:
        data = huge_claim()
        out = np.empty((8, 8, 3), np.uint8)
        with pytest.raises(PixelBudgetError, match=rf"^{re.escape(OVER_HUGE)}$"):
            render(data, (HUGE, HUGE), 0, (0, 0, 64, 64), out)
    finally:
        use_window_decode(previous)


@pytest.mark.usefixtures("decoder")
def test_a_header_claiming_32768_squared_is_refused_by_every_decode() -> None:
    data = huge_claim()
    assert len(data) < 2000
    calls: list[Callable[[], object]] = [
        lambda: RandomResizedCrop(224)(data, DRAWS),
        lambda: CenterCrop(224)(data),
        lambda: decode(data),
    ]
    for call in calls:
        with pytest.raises(PixelBudgetError, match=rf"^{re.escape(OVER_HUGE)}$") as refused:
            call()
        assert isinstance(refused.value, FieldValueError)


REFUSE_IN_A_CHILD = """
import sys
from fastpack.formats import PixelBudgetError
from fastpack.reader.image import CenterCrop, RandomResizedCrop
from fastpack.reader.image.crop_decode import use_window_decode
from fastpack.reader.image.decode import decode
from tests.reader.image._hostile import huge_claim

use_window_decode(sys.argv[1] == "window")
data = huge_claim()
calls = {
    "RandomResizedCrop(224)": lambda: RandomResizedCrop(224)(data, [0.5] * 23),
    "CenterCrop(224)": lambda: CenterCrop(224)(data),
    "decode": lambda: decode(data),
}
for name, call in calls.items():
    try:
        call()
    except PixelBudgetError as e:
        print(name, "refused:", e)
"""


@pytest.mark.parametrize("path", ["window", "simplejpeg"])
def test_the_refusals_stay_small_in_memory(path: str) -> None:
    """Before the budget these took 6.4 GB (RandomResizedCrop) and 2.2 GB (CenterCrop)."""
    out, peak = run_measured(REFUSE_IN_A_CHILD, path)
    assert out.splitlines() == [
        f"{name} refused: {OVER_HUGE}"
        for name in ("RandomResizedCrop(224)", "CenterCrop(224)", "decode")
    ]
    assert peak < SMALL_PEAK_MB, f"peak RSS {peak:.0f} MB"


def test_a_png_over_the_budget_is_refused_from_its_ihdr() -> None:
    data = png_bytes(48, 40, alpha=True)
    assert decode_png(data, 48 * 40 * 4).shape == (48, 40, 4)
    with pytest.raises(
        PixelBudgetError,
        match=r"^40 x 48 pixels x 4 components = 7,680 samples, over the pixel budget of 7,679 ",
    ):
        decode_png(data, 48 * 40 * 4 - 1)
    with pytest.raises(ImageHeaderError, match="not a PNG with its IHDR chunk first"):
        decode_png(b"GIF89a" + bytes(40))


@pytest.mark.parametrize("path", ["window", "simplejpeg"])
def test_bytes_whose_header_simplejpeg_cannot_name_give_pixels_or_a_field_value_error(
    path: str,
) -> None:
    """simplejpeg's header reader raises KeyError on these; no transform lets one through."""
    data = unnamed_sampling()
    with pytest.raises(KeyError):
        simplejpeg.decode_jpeg_header(data)
    with window_decode(path == "window"):
        transforms: list[RandomResizedCrop | CenterCrop] = [RandomResizedCrop(32), CenterCrop(32)]
        for transform in transforms:
            result = outcome(partial(transform, data, DRAWS if transform.draws else None))
            if isinstance(result, np.ndarray):
                assert result.shape == (32, 32, 3)
            else:
                assert isinstance(result, FieldValueError), repr(result)
        if path == "simplejpeg":  # libjpeg refuses what simplejpeg decodes from them
            with pytest.raises(ImageDecodeError, match=r"^Corrupt JPEG data"):
                CenterCrop(32)(data)


def test_the_guard_names_what_a_decoder_raised_that_is_not_a_value_error() -> None:
    with pytest.raises(ImageDecodeError, match=r"^KeyError: 6$") as refused:
        guarded(simplejpeg.decode_jpeg_header, unnamed_sampling())
    assert isinstance(refused.value.__cause__, KeyError)
    with pytest.raises(ImageDecodeError, match=r"^tjDecompressHeader3\(\): Could not determine"):
        guarded(simplejpeg.decode_jpeg, with_frame_size(jpeg_bytes(), 0, 80))  # a ValueError
    with pytest.raises(MemoryError):  # the machine's: not the bytes'
        guarded(np.empty, 1 << 62, np.uint8)


def test_a_reader_takes_the_transform_budget_or_refuses_a_different_one() -> None:
    transform = RandomResizedCrop(8, pixel_budget=1000)
    assert transform_budget(transform) == 1000
    assert transform_budget(None) is None
    assert resolve_budget(None, transform) == 1000
    assert resolve_budget(None, None) == DEFAULT_PIXEL_BUDGET
    assert resolve_budget(1000, transform) == 1000
    assert resolve_budget(5, None) == 5
    with pytest.raises(ValueError, match=r"pixel_budget=2,000 differs from the transform's own"):
        resolve_budget(2000, transform)
    for bad in (0, -1, 1.5, True, "1000"):
        with pytest.raises(ValueError, match="pixel_budget must be an int >= 1"):
            resolve_budget(bad, None)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="pixel_budget must be an int >= 1"):
            CenterCrop(8, pixel_budget=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("transform", [CenterCrop(224), RandomResizedCrop(224)])
def test_a_frame_of_no_pixels_is_refused_as_a_field_value_error(
    transform: CenterCrop | RandomResizedCrop,
) -> None:
    data = bytearray(simplejpeg.encode_jpeg(np.zeros((8, 8, 1), np.uint8), 90, "GRAY", "Gray"))
    sof = data.index(b"\xff\xc0")
    data[sof + 7 : sof + 9] = b"\0\0"  # the frame's width
    with pytest.raises(FieldValueError, match=r"declares an empty image: 0 x 8 pixels"):
        transform(bytes(data), [0.5] * transform.draws)
