"""A Dataset refuses an image over its pixel budget before decoding it, and every image that does
not decode is a FastpackError naming the sample: on a dataset built with a larger budget (which
stores a small progressive JPEG whose frame header claims 32768 x 32768), and on one whose stored
JPEG has a frame header simplejpeg's header reader cannot name."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import simplejpeg
from fastpack.compiler import BuildOptions, build
from fastpack.formats import Index, PixelBudgetError, ShardFormatError
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop, verify_dataset

from tests.reader.image._hostile import (
    HUGE,
    SMALL_PEAK_MB,
    frame_at,
    huge_claim,
    progressive_jpeg,
    run_measured,
)
from tests.reader.image._window import outcome, window_decode

OVER = (
    f"{HUGE} x {HUGE} pixels x 3 components = 3,221,225,472 samples, over the pixel budget of "
    "268,435,456 (pixel_budget)"
)


@pytest.fixture(scope="module")
def huge_dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A dataset built with a budget of 2**32, which stores the claim (it is only walked), and
    the sample that holds it."""
    root = tmp_path_factory.mktemp("huge")
    source = root / "src"
    (source / "a").mkdir(parents=True)
    for k in range(3):
        (source / "a" / f"{k}.jpg").write_bytes(progressive_jpeg(40, 48, seed=k))
    (source / "a" / "1_huge.jpg").write_bytes(huge_claim())
    out = root / "ds"
    build(source, out, BuildOptions(workers=1, pixel_budget=1 << 32, progress=False))
    with Dataset(out) as ds:
        huge = next(i for i in range(len(ds)) if ds.source(i) == "a/1_huge.jpg")
    return out, huge


def named(path: Path, i: int) -> str:
    with Dataset(path) as ds:
        key = ds.key(i)
    return rf"\S+000000\.tar: sample {i} \(key {key}\) field 'jpg' at offset \d+"


@pytest.mark.parametrize(
    "transform",
    [RandomResizedCrop(224), CenterCrop(224), None],
    ids=["RandomResizedCrop", "CenterCrop", "full"],
)
@pytest.mark.parametrize("fields", [None, ("cls", "jpg")], ids=["image-label", "fields"])
def test_every_read_refuses_the_claim_naming_the_sample(
    huge_dataset: tuple[Path, int],
    transform: RandomResizedCrop | CenterCrop | None,
    fields: tuple[str, ...] | None,
) -> None:
    path, huge = huge_dataset
    ds = Dataset(path, transform=transform, fields=fields)
    message = rf"^{named(path, huge)}: {re.escape(OVER)}$"
    with pytest.raises(PixelBudgetError, match=message):
        ds[huge]
    others = [i for i in range(len(ds)) if i != huge]
    if transform is not None:  # a batch of one size
        with pytest.raises(PixelBudgetError, match=message):
            ds.__getitems__([others[0], huge])
        ds.__getitems__(others)
    else:
        with pytest.raises(PixelBudgetError, match=message):
            ds.__getitems__([huge, others[0]])
    for i in others:
        ds[i]


def test_a_budget_of_its_own_lets_a_dataset_read_it_or_refuse_smaller(
    huge_dataset: tuple[Path, int],
) -> None:
    path, huge = huge_dataset
    small = Dataset(path, pixel_budget=40 * 48 * 3 - 1)
    assert small.pixel_budget == 40 * 48 * 3 - 1
    with pytest.raises(PixelBudgetError, match=r"over the pixel budget of 5,759 \(pixel_budget\)$"):
        small[0 if huge else 1]
    assert Dataset(path).pixel_budget == DEFAULT_PIXEL_BUDGET
    assert Dataset(path, transform=CenterCrop(8, pixel_budget=99)).pixel_budget == 99
    with pytest.raises(ValueError, match="pixel_budget=100 differs from the transform's own"):
        Dataset(path, transform=CenterCrop(8, pixel_budget=99), pixel_budget=100)


READ_IN_A_CHILD = """
import sys
from fastpack.formats import PixelBudgetError
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop, verify_dataset
from fastpack.reader.image.crop_decode import use_window_decode

use_window_decode(sys.argv[3] == "window")
path, huge = sys.argv[1], int(sys.argv[2])
for transform in (RandomResizedCrop(224), CenterCrop(224), None):
    try:
        Dataset(path, transform=transform)[huge]
    except PixelBudgetError:
        print(type(transform).__name__, "refused")
report = verify_dataset(path, decode=True)
print("verify", [p for p in report.problems if "pixel budget" in p] != [])
"""


@pytest.mark.parametrize("path", ["window", "simplejpeg"])
def test_the_refusals_and_verify_decode_stay_small_in_memory(
    huge_dataset: tuple[Path, int], path: str
) -> None:
    """Before the budget: 6.4 GB in Dataset[i] with RandomResizedCrop(224), 2.2 GB with
    CenterCrop, 9.5 GB in verify --decode."""
    dataset, huge = huge_dataset
    printed, peak = run_measured(READ_IN_A_CHILD, str(dataset), str(huge), path)
    assert printed.splitlines() == [
        "RandomResizedCrop refused",
        "CenterCrop refused",
        "NoneType refused",
        "verify True",
    ]
    assert peak < SMALL_PEAK_MB, f"peak RSS {peak:.0f} MB"


def test_verify_decode_names_the_sample_over_the_budget(huge_dataset: tuple[Path, int]) -> None:
    path, huge = huge_dataset
    report = verify_dataset(path, decode=True)
    with Dataset(path) as ds:
        key = ds.key(huge)
    over = [p for p in report.problems if "pixel budget" in p]
    assert len(over) == 1, report.problems
    assert f"sample {huge} (key {key})" in over[0] or f"{key}" in over[0], over[0]
    assert over[0].endswith(f"does not decode ({OVER})"), over[0]
    assert verify_dataset(path).ok  # without --decode nothing is decoded


def with_unnamed_sampling(path: Path, i: int) -> None:
    """Edit the stored JPEG of sample `i` in place: luma sampling factors 1x4."""
    shard = path / "shards" / "000000.tar"
    _, offset, size = Index(path / "index.fpx").locate(i, "jpg", shard.stat().st_size)
    with shard.open("r+b") as f:
        f.seek(offset)
        payload = f.read(size)
        f.seek(offset + frame_at(payload) + 11)
        f.write(b"\x14")


@pytest.mark.parametrize("window", [True, False], ids=["window", "simplejpeg"])
def test_a_header_simplejpeg_cannot_name_gives_pixels_or_a_named_error(
    tmp_path: Path, window: bool
) -> None:
    source = tmp_path / "src"
    (source / "a").mkdir(parents=True)
    for k in range(3):
        rgb = np.ascontiguousarray(np.random.default_rng(k).integers(0, 255, (48, 48, 3)))
        data = simplejpeg.encode_jpeg(rgb.astype(np.uint8), colorsubsampling="444")
        (source / "a" / f"{k}.jpg").write_bytes(bytes(data))
    path = tmp_path / "ds"
    build(source, path, BuildOptions(workers=1, progress=False))
    with_unnamed_sampling(path, 1)
    with pytest.raises(KeyError):
        simplejpeg.decode_jpeg_header(bytes(Dataset(path).read_bytes(1)))
    with window_decode(window):
        for transform in (RandomResizedCrop(32), CenterCrop(32), None):
            for fields in (None, ("cls", "jpg")):
                ds = Dataset(path, transform=transform, fields=fields)
                result = outcome(partial(ds.__getitem__, 1))
                if isinstance(result, tuple):
                    assert result[0 if fields is None else 1].dtype == np.uint8
                else:
                    assert isinstance(result, ShardFormatError), repr(result)
                    assert re.match(rf"^{named(path, 1)} does not decode: ", str(result)), result
        with pytest.raises(ShardFormatError, match=rf"^{named(path, 1)} does not decode: "):
            Dataset(path)[1]  # the full decode: simplejpeg, which refuses it
