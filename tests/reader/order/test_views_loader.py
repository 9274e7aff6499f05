"""Views through the map-style loader: only the view's samples, splits that never meet, a
balanced view's equal class shares, and a saved state that names its view."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import View, write_view_file
from fastpack.reader import CenterCrop, Dataset, EpochBatchSampler, Mix, make_loader

from fastpack.view_build import build_views, save_views

from .conftest import SAMPLES
from .test_mix import _dataset


def _labels(loader: object) -> list[int]:
    return [int(y) for _, labels in loader for y in labels]  # type: ignore[attr-defined]


def test_loader_reads_only_the_view(one_class_per_sample: Path) -> None:
    save_views(one_class_per_sample, build_views(one_class_per_sample, split="train:0.8,val:0.2"))
    train = Dataset(one_class_per_sample, view="train", transform=CenterCrop(8))
    val = Dataset(one_class_per_sample, view="val", transform=CenterCrop(8))
    rows_train, rows_val = train.rows(), val.rows()
    assert rows_train is not None
    assert rows_val is not None
    assert len(train) + len(val) == SAMPLES
    seen_train = _labels(make_loader(train, batch_size=16, num_workers=2))
    seen_val = _labels(make_loader(val, batch_size=16, num_workers=0))
    # one class per sample, labels in folder order: a label is its row
    assert sorted(seen_train) == rows_train.tolist()
    assert sorted(seen_val) == rows_val.tolist()
    assert not set(seen_train) & set(seen_val)
    assert train.key(0) == Dataset(one_class_per_sample).key(int(rows_train[0]))
    with pytest.raises(IndexError, match="view 'val'"):
        val[len(val)]


def test_state_names_the_view(one_class_per_sample: Path) -> None:
    for name, seed in (("part", 2), ("other", 3)):
        views = build_views(one_class_per_sample, name, fraction=0.5, seed=seed)
        save_views(one_class_per_sample, views)
    loader = make_loader(Dataset(one_class_per_sample, view="part"), batch_size=8, num_workers=0)
    it = iter(loader)
    seen = [int(y) for y in next(it)[1]]
    state = loader.state_dict()
    assert state["order"]["view"]["name"] == "part"
    for other in (Dataset(one_class_per_sample, view="other"), Dataset(one_class_per_sample)):
        with pytest.raises(ValueError, match="view 'part'"):
            make_loader(other, batch_size=8, num_workers=0).load_state_dict(state)
    resumed = make_loader(Dataset(one_class_per_sample, view="part"), batch_size=3, num_workers=1)
    resumed.load_state_dict(state)
    seen += _labels(resumed)
    rows = Dataset(one_class_per_sample, view="part").rows()
    assert rows is not None
    assert Counter(seen) == Counter(rows.tolist())


def test_balanced_view_gives_every_class_its_share(tmp_path: Path) -> None:
    path = _dataset(tmp_path, "skewed", {"many": 30, "some": 6, "one": 1})
    save_views(path, build_views(path, "fair", balance=True))
    ds = Dataset(path, view="fair", transform=CenterCrop(8))
    assert len(ds) == 37
    for world in (1, 3):
        per_rank = []
        for rank in range(world):
            sampler = EpochBatchSampler(ds, 5, seed=0, rank=rank, world_size=world)
            per_rank.append(len(sampler))
        assert len(set(per_rank)) == 1  # every rank the same number of batches
    loader = make_loader(ds, batch_size=5, num_workers=2)
    for epoch in range(2):
        ds.set_epoch(epoch)
        shares = Counter(_labels(loader))
        assert sorted(shares.values()) == [12, 12, 13]


def test_a_view_of_another_dataset_is_refused(one_class_per_sample: Path, tmp_path: Path) -> None:
    other = _dataset(tmp_path, "other", {"x": 3})
    foreign = build_views(other, "x")[0]
    write_view_file(tmp_path / "x.fpview", foreign)
    with pytest.raises(ValueError, match="made for another dataset"):
        Dataset(one_class_per_sample, view=tmp_path / "x.fpview")
    # a View object given directly is checked the same way
    with pytest.raises(ValueError, match="made for another dataset"):
        Dataset(one_class_per_sample, view=foreign)
    assert isinstance(foreign, View)


def test_mix_of_views(one_class_per_sample: Path) -> None:
    save_views(one_class_per_sample, build_views(one_class_per_sample, "low", where="c0*"))
    low = Dataset(one_class_per_sample, view="low", transform=CenterCrop(8))
    rows = low.rows()
    assert rows is not None
    assert rows.tolist() == list(range(100))  # c000 .. c099
    whole = Dataset(one_class_per_sample, transform=CenterCrop(8))
    mix = Mix([(low, 1), (whole, 1)], epoch_size=40, seed=1)
    labels = np.array(_labels(make_loader(mix, batch_size=8, num_workers=0)))
    assert len(labels) == 40
    assert int((labels >= 100).sum()) <= 20  # only the whole dataset has rows past 99
