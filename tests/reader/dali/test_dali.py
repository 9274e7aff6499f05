"""The DALI reader in CPU-only mode: pixels against simplejpeg + OpenCV, labels, sharding, epoch
length, bad input. The GPU path (`device="gpu"`) needs a GPU and is not run here."""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
import torch
from fastpack.compiler import BuildOptions, build
from fastpack.formats import DatasetFiles, DatasetNotFoundError, ShardFormatError
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop
from fastpack.reader.dali import DaliLoader, DaliOptions, make_dali_loader
from fastpack.reader.dali.labels import parse_labels
from fastpack.reader.dali.malloc import ENV_VARIABLE, fix_mmap_threshold
from fastpack.reader.errors import MissingDependencyError
from hypothesis import given
from hypothesis import strategies as st

from ..conftest import centre_crop

N = 13  # samples: one image per class, so a label names its sample
SIZE, RESIZE = 56, 64
# Mean absolute difference (0..255) between DALI's eval output and simplejpeg full decode +
# cv2.resize (INTER_AREA down, INTER_LINEAR up) + centre crop. Both decode with libjpeg-turbo;
# the resize filters differ (DALI: linear with antialiasing). Measured on these noisy images:
# per image at most ~2.8, over the dataset ~1.1.
PER_IMAGE_TOLERANCE = 4.0
DATASET_TOLERANCE = 1.8

Batches = list[tuple[torch.Tensor, torch.Tensor]]


@pytest.fixture
def dataset(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """13 samples with labels 0..12 in several tars, image sides 48..191."""
    source = make_image_folder(classes=N, per_class=1, size=96)
    build(source, tmp_path / "ds", BuildOptions(workers=1, shard_size=40_000, progress=False))
    assert len(DatasetFiles(tmp_path / "ds").manifest.shards) >= 4  # tar order can be shuffled
    return tmp_path / "ds"


EVAL = CenterCrop(SIZE, resize=RESIZE)


def _loader(path: Path | Dataset, **kwargs: object) -> DaliLoader:
    options: dict[str, object] = {"batch_size": 4, "transform": EVAL, "num_workers": 2}
    options.update(kwargs)
    return make_dali_loader(path, **options)  # type: ignore[arg-type]


def _epoch(loader: DaliLoader) -> Batches:
    return [(images.clone(), labels.clone()) for images, labels in loader]


def _labels(batches: Batches) -> list[int]:
    return [int(v) for _, labels in batches for v in labels]


def _reference(data: bytes) -> npt.NDArray[np.uint8]:
    """simplejpeg full decode, shorter side to RESIZE with OpenCV, centre SIZE x SIZE."""
    return centre_crop(simplejpeg.decode_jpeg(data, colorspace="RGB"), SIZE, RESIZE)


def _payloads(path: Path) -> dict[int, bytes]:
    """label -> stored JPEG bytes, read through the index."""
    files = DatasetFiles(path)
    out = {}
    for i in range(len(files)):
        shard = files.shard_path(int(files.index.shard[i])).read_bytes()
        _, offset, size = files.index.locate(i, "jpg", len(shard))
        out[int(files.index.label[i])] = shard[offset : offset + size]
    return out


def test_eval_pixels_and_labels_match_simplejpeg(dataset: Path) -> None:
    batches = _epoch(_loader(dataset))
    assert sorted(_labels(batches)) == list(range(N))
    references = {label: _reference(data) for label, data in _payloads(dataset).items()}
    diffs = []
    for images, labels in batches:
        assert images.dtype == torch.uint8
        assert images.shape == (len(labels), SIZE, SIZE, 3)
        assert labels.dtype == torch.int64
        for image, label in zip(images.numpy(), labels.tolist(), strict=True):
            diff = np.abs(image.astype(np.int16) - references[label]).mean()
            wrong = np.abs(image.astype(np.int16) - references[(label + 1) % N]).mean()
            assert diff < PER_IMAGE_TOLERANCE < wrong, (label, diff, wrong)
            diffs.append(diff)
    assert float(np.mean(diffs)) < DATASET_TOLERANCE


@pytest.mark.parametrize(
    ("num_shards", "batch_size", "sizes"),
    [(1, 4, [4, 4, 4, 1]), (2, 4, [4, 3]), (3, 2, [2, 2, 1])],
)
def test_every_sample_once_per_epoch(
    dataset: Path, num_shards: int, batch_size: int, sizes: list[int]
) -> None:
    """Each rank yields ceil(N / n) samples in equal batches; together they cover every sample,
    and only a rank whose share is one short repeats a sample, once. Shuffled tars and samples."""
    loaders = [
        _loader(
            dataset,
            transform=RandomResizedCrop(SIZE),
            batch_size=batch_size,
            rank=r,
            world_size=num_shards,
        )
        for r in range(num_shards)
    ]
    share = math.ceil(N / num_shards)
    orders = []
    for _ in range(3):
        seen: Counter[int] = Counter()
        for loader in loaders:
            assert (len(loader), loader.samples_per_epoch) == (len(sizes), share)
            batches = _epoch(loader)
            assert [len(labels) for _, labels in batches] == sizes
            labels = _labels(batches)
            assert len(labels) - len(set(labels)) <= 1
            seen.update(labels)
            orders.append(labels)
        assert set(seen) == set(range(N))
        assert max(seen.values()) <= 2
        assert sum(seen.values()) - N == num_shards * share - N  # the repeats
    assert len({tuple(order) for order in orders}) > num_shards  # the order changes


def test_drop_last_gives_equal_full_batches(dataset: Path) -> None:
    loaders = [
        _loader(dataset, batch_size=4, drop_last=True, rank=r, world_size=2) for r in range(2)
    ]
    for _ in range(2):
        labels = []
        for loader in loaders:
            assert (len(loader), loader.samples_per_epoch) == (1, 4)
            batches = _epoch(loader)
            assert [len(b) for _, b in batches] == [4]
            labels += _labels(batches)
        assert len(set(labels)) == 8


def test_train_crops_are_seeded_and_vary(dataset: Path) -> None:
    first, second = (
        _loader(dataset, transform=RandomResizedCrop(32), seed=5, batch_size=5) for _ in range(2)
    )
    epochs = [_epoch(first), _epoch(first)]
    assert all(images.shape[1:] == (32, 32, 3) for images, _ in epochs[0])
    assert all(torch.equal(a[0], b[0]) for a, b in zip(epochs[0], _epoch(second), strict=True))
    by_label = [
        {
            int(label): image
            for images, labels in epoch
            for image, label in zip(images, labels, strict=True)
        }
        for epoch in epochs
    ]
    assert any(not torch.equal(by_label[0][k], by_label[1][k]) for k in range(N))


def test_unfinished_epoch_is_read_to_its_end(dataset: Path) -> None:
    loader = _loader(dataset, batch_size=3)
    for _ in loader:
        break
    assert sorted(_labels(_epoch(loader))) == list(range(N))
    assert sorted(_labels(_epoch(loader))) == list(range(N))


def test_shard_from_environment(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    loader = _loader(dataset)
    assert (loader.rank, loader.world_size) == (1, 2)
    assert _labels(_epoch(loader)) == list(range(6, N))  # DALI shard 1 of 2: samples 6..12


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size must be at least 1, got 0"),
        (
            {"transform": RandomResizedCrop(SIZE, scale=(0.5, 1.5))},
            r"DALI's crop scale must satisfy 0 < low <= high <= 1, got \(0.5, 1.5\)",
        ),
        ({"world_size": 14, "rank": 0}, "13 samples cannot be split over 14 shards"),
        ({"drop_last": True, "batch_size": 7, "world_size": 2}, "leave 6 per shard, less than"),
        ({"seed": -1}, "seed must be >= 0, got -1"),
        ({"field": "cls"}, "field must name the image member, not 'cls'"),
        ({"num_workers": 0}, r"num_workers=0 \(loading in the main process\) has no DALI"),
        ({"prefetch_factor": 0}, "prefetch_factor .* must be at least 1, got 0"),
        (
            {"transform": CenterCrop(SIZE, resize=RESIZE, fastupsample=True)},
            r"cannot honour fastupsample=True on the CPU \(CenterCrop\(",
        ),
        ({"transform": CenterCrop((32, 48))}, r"makes square crops, but CenterCrop\(.*\(32, 48\)"),
        ({"transform": None}, r"needs a transform \(CenterCrop, RandomResizedCrop\), got None"),
    ],
)
def test_bad_arguments(dataset: Path, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _loader(dataset, **kwargs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"device": "tpu"}, "device must be 'cpu' or 'gpu', got 'tpu'"),
        ({"mean": (0.5, 0.5)}, "mean and std need 3 values"),
        ({"std": (0.5, 0.0, 0.5)}, "std > 0"),
        ({"initial_fill": 0}, "initial_fill must be at least 1, got 0"),
    ],
)
def test_bad_dali_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DaliOptions(**options)


def test_dali_options_from_keywords_names_what_it_does_not_take() -> None:
    assert DaliOptions.from_keywords({"initial_fill": 8}, "ds") == DaliOptions(initial_fill=8)
    with pytest.raises(ValueError, match=r"^ds cannot honour scale, timeout: not options of the"):
        DaliOptions.from_keywords({"timeout": 5, "scale": (0.5, 1.0), "device": "cpu"}, "ds")


def test_io_names_how_dali_reads_the_shards(dataset: Path) -> None:
    """`io` as `Dataset(io=)`: "pread" reads without maps; a Dataset reads with its own."""
    for io, expected in (("pread", True), ("mmap", False), ("auto", False), (None, False)):
        loader = _loader(dataset, io=io)
        assert loader.options.dont_use_mmap is expected
        loader.close()
    fed = _loader(Dataset(dataset, io="pread"))
    assert fed.options.dont_use_mmap is True
    fed.close()
    with pytest.raises(
        ValueError, match="reads a Dataset with the Dataset's own io, not io='mmap'"
    ):
        _loader(Dataset(dataset), io="mmap")


def test_missing_dataset_and_shard_index(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="dataset directory not found"):
        _loader(tmp_path / "nothing")
    (dataset / "shards" / "000003.idx").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"000003\.idx: shard file listed in the"):
        _loader(dataset)


def test_cls_that_is_not_a_number(dataset: Path) -> None:
    files = DatasetFiles(dataset)
    row = 4
    shard = files.shard_path(int(files.index.shard[row]))
    offset = int(files.index.offsets("cls")[row])
    with shard.open("r+b") as f:
        f.seek(offset)
        assert f.read(1) == b"4"
        f.seek(offset)
        f.write(b"x")
    with pytest.raises(ShardFormatError, match=r"a \.cls member holds b'x', expected an ASCII"):
        _epoch(_loader(dataset))


def test_without_dali(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nvidia.dali.plugin.base_iterator", None)
    with pytest.raises(MissingDependencyError, match=r"needs NVIDIA DALI and torch \(pip install"):
        _loader(dataset)
    assert issubclass(MissingDependencyError, ModuleNotFoundError)  # what callers caught before


def _padded(rows: list[bytes]) -> npt.NDArray[np.uint8]:
    width = max(len(r) for r in rows)
    return np.array([list(r.ljust(width, b"\0")) for r in rows], np.uint8)


@given(st.lists(st.integers(-(10**17), 10**18 - 1), min_size=1, max_size=20))
def test_parse_labels_reads_decimal(values: list[int]) -> None:
    parsed = parse_labels(_padded([str(v).encode() for v in values]), "ds")
    assert parsed.dtype == np.int64
    assert parsed.tolist() == values


@pytest.mark.parametrize("bad", [b"", b"-", b"1a", b"1\x002", b"--1", b"1-", b" 1", b"9" * 19])
def test_parse_labels_rejects(bad: bytes) -> None:
    with pytest.raises(ShardFormatError, match=r"ds: a \.cls member holds b"):
        parse_labels(_padded([b"7", bad]), "ds")


def test_fixed_mmap_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    assert fix_mmap_threshold(256 * 1024) is True  # glibc, as on the machines that run this
    monkeypatch.setenv(ENV_VARIABLE, "65536")
    assert fix_mmap_threshold(256 * 1024) is False
    with pytest.raises(ValueError, match="must be >= 0 bytes, got -1"):
        fix_mmap_threshold(-1)
