"""The DALI reader on record (TFRecord) datasets, CPU-only: `fn.readers.tfrecord` with images
from `image/encoded` and labels from `image/class/label`. Pixels against simplejpeg + OpenCV,
labels, sharding over ranks, batches equal to those of the tar dataset built from the same
source, extra fields (masks, class fields, member bytes, zstd) equal to the tar's, optional
fields refused (the TFRecord reader cannot batch a lacking feature), and
`make_loader(loader="dali")`, whose fed samples give optional fields too."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fastpack.formats import DatasetFiles
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop, make_loader
from fastpack.reader.dali import DaliLoader, make_dali_loader

from tests.conftest import jpeg_bytes
from tests.reader._tfrecord_data import FIELDS_COUNT, Pair, build_fields_pair, build_pair
from tests.reader.dali.test_dali import _epoch, _labels, _reference

N = 13  # samples: one image per class, so a label names its sample
SIZE, RESIZE = 56, 64
PER_IMAGE_TOLERANCE = 4.0  # as test_dali.py: DALI's resize against OpenCV's
DATASET_TOLERANCE = 1.8

Batches = list[tuple[torch.Tensor, torch.Tensor]]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    """13 samples with labels 0..12, image sides 48..191, as tars and as records in >= 4
    shards."""
    root = tmp_path_factory.mktemp("dali-records")
    rng = np.random.default_rng(0)
    for c in range(N):
        folder = root / "src" / f"class_{c:02d}"
        folder.mkdir(parents=True)
        h, w = (int(v) for v in rng.integers(48, 192, 2))
        (folder / "img.jpg").write_bytes(jpeg_bytes(h, w, seed=c))
    built = build_pair(root / "src", root, shard_size=40_000)
    assert len(DatasetFiles(built.records).manifest.shards) >= 4
    return built


@pytest.fixture(scope="module")
def fields(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    return build_fields_pair(tmp_path_factory.mktemp("dali-fields"), shard_size=40_000)


EVAL = CenterCrop(SIZE, resize=RESIZE)


def _loader(path: Path, **kwargs: Any) -> DaliLoader:
    options: dict[str, Any] = {"batch_size": 4, "transform": EVAL, "num_workers": 2}
    options.update(kwargs)
    return make_dali_loader(path, **options)


def test_eval_pixels_and_labels_match_simplejpeg(pair: Pair) -> None:
    dataset = Dataset(pair.records)
    references = {
        int(dataset.labels[i]): _reference(bytes(dataset.read_bytes(i)))
        for i in range(len(dataset))
    }
    batches = _epoch(_loader(pair.records))
    assert sorted(_labels(batches)) == list(range(N))
    diffs = []
    for images, labels in batches:
        assert images.dtype == torch.uint8
        assert labels.dtype == torch.int64
        assert images.shape == (len(labels), SIZE, SIZE, 3)
        for image, label in zip(images.numpy(), labels.tolist(), strict=True):
            diff = np.abs(image.astype(np.int16) - references[label]).mean()
            wrong = np.abs(image.astype(np.int16) - references[(label + 1) % N]).mean()
            assert diff < PER_IMAGE_TOLERANCE < wrong, (label, diff, wrong)
            diffs.append(diff)
    assert float(np.mean(diffs)) < DATASET_TOLERANCE


def test_batches_equal_the_tar_datasets(pair: Pair) -> None:
    """The same samples in the same order, decoded alike, with or without shuffling."""
    train = {"transform": RandomResizedCrop(SIZE), "seed": 5, "rank": 1, "world_size": 2}
    for options in ({}, train):
        tar, records = _loader(pair.tar, **options), _loader(pair.records, **options)
        for _ in range(2):
            a, b = _epoch(tar), _epoch(records)
            assert [len(y) for _, y in b] == [len(y) for _, y in a]
            for (x, y), (u, v) in zip(a, b, strict=True):
                assert torch.equal(y, v)
                assert torch.equal(x, u)


def test_two_ranks_cover_every_sample(pair: Pair) -> None:
    """Each rank yields ceil(N / 2) = 7 samples; together every sample, one read twice."""
    crop = RandomResizedCrop(SIZE)
    loaders = [_loader(pair.records, transform=crop, rank=r, world_size=2) for r in range(2)]
    orders = []
    for _ in range(3):
        seen: Counter[int] = Counter()
        for loader in loaders:
            assert (len(loader), loader.samples_per_epoch) == (2, math.ceil(N / 2))
            batches = _epoch(loader)
            assert [len(labels) for _, labels in batches] == [4, 3]
            orders.append(_labels(batches))
            seen.update(orders[-1])
        assert set(seen) == set(range(N))
        assert sum(seen.values()) == N + 1
        assert max(seen.values()) == 2
    assert len({tuple(order) for order in orders}) > 2  # shuffled anew every epoch


def test_drop_last(pair: Pair) -> None:
    loaders = [_loader(pair.records, drop_last=True, rank=r, world_size=2) for r in range(2)]
    labels = [label for loader in loaders for label in _labels(_epoch(loader))]
    assert len(labels) == len(set(labels)) == 8


FIELDS = ("seg.png", "txt", "story.txt.zst", "ids.json", "meta.json.zst")


def _field_batches(path: Path, **options: Any) -> list[tuple[Any, ...]]:
    crop = CenterCrop(24, resize=28)
    loader = make_dali_loader(
        path, batch_size=5, transform=crop, num_workers=2, fields=FIELDS, **options
    )
    return list(loader)


def _same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), where
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{k}]")
    else:
        assert a == b, where


def test_fields_equal_the_tar_datasets(fields: Pair) -> None:
    for options in ({}, {"shuffle": True, "seed": 3}):
        tar = _field_batches(fields.tar, **options)
        _same(tar, _field_batches(fields.records, **options), str(options))
    batches = _field_batches(fields.records)
    assert all(v["seg.png"].shape[1:3] == (24, 24) for _, _, v in batches)
    stories = Dataset(fields.records, fields=("story.txt.zst",))
    story = [bytes(t.numpy()).decode() for _, _, v in batches for t in v["story.txt.zst"]]
    assert story == [stories[i][0] for i in range(FIELDS_COUNT)]


def test_refused_fields_name_the_dataset(fields: Pair) -> None:
    with pytest.raises(ValueError, match=f"{fields.records}: field 'boxes.npy' holds boxes"):
        make_dali_loader(fields.records, batch_size=2, transform=EVAL, fields=("boxes.npy",))
    with pytest.raises(ValueError, match="field 'cls' is returned as the labels already"):
        make_dali_loader(fields.records, batch_size=2, transform=EVAL, fields=("cls",))
    message = (
        f"{fields.records}: field 'note.txt' is optional, and the dataset has record shards: "
        "DALI's TFRecord reader cannot batch"
    )
    with pytest.raises(ValueError, match=message):
        make_dali_loader(fields.records, batch_size=2, transform=EVAL, fields=("txt", "note.txt"))
    tar = make_dali_loader(fields.tar, batch_size=2, transform=EVAL, fields=("note.txt",))
    assert tar.options.fields[0].optional  # tars can: DALI's webdataset reader marks them


def test_fed_records_give_optional_fields(fields: Pair) -> None:
    """make_loader feeds DALI from the index (feed.py): optional fields of record shards come
    as from tars, None where absent."""

    def notes(path: Path) -> list[bytes | None]:
        names = ("jpg", "cls", "note.txt")
        dataset = Dataset(path, fields=names, transform=CenterCrop(16))
        loader = make_loader(dataset, batch_size=2, shuffle=False, loader="dali")
        return [None if t is None else bytes(t.numpy()) for b in loader for t in b[2]]

    found = notes(fields.records)
    assert found == notes(fields.tar)
    assert None in found
    assert any(note for note in found)


def test_make_loader_with_the_dali_decoder(pair: Pair, fields: Pair) -> None:
    dataset = Dataset(pair.records, transform=CenterCrop(32))
    dali = [
        (x.clone(), y.clone())
        for x, y in make_loader(dataset, batch_size=4, shuffle=False, num_workers=1, loader="dali")
    ]
    assert torch.cat([y for _, y in dali]).tolist() == dataset.labels.tolist()
    assert all(x.shape[1:] == (32, 32, 3) for x, _ in dali)
    names = ("jpg", "seg.png", "cls", "txt")
    per_field = [
        list(
            make_loader(
                Dataset(path, fields=names, transform=RandomResizedCrop(24), seed=2),
                batch_size=6,
                seed=2,
                num_workers=1,
                loader="dali",
            )
        )
        for path in fields
    ]
    _same(per_field[0], per_field[1], "make_loader fields")
    assert all(len(batch) == len(names) for batch in per_field[1])


def test_tar_loader_options_are_unchanged(pair: Pair) -> None:
    """The record loader reads `fn.readers.tfrecord` features; the tar loader reads members."""
    records, tar = _loader(pair.records).options, _loader(pair.tar).options
    assert records.records
    assert not tar.records
    assert dict(records.features) == {"jpg": "image/encoded"}
    assert records.label == tar.label == "cls"
    assert all(p.endswith(".tfrecord") for p in records.paths)
    assert all(p.endswith(".tar") for p in tar.paths)
