"""The rest of the readers over a dataset indexed in place: the torch loader of `make_loader`
(with worker processes), views made on it, a mix of two indexed datasets, and `fastpack info`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from fastpack.compiler import IndexOptions, index_shards
from fastpack.reader import CenterCrop, Dataset, Mix, make_loader
from fastpack.reader.torch_loader.dataloader import FastpackLoader

from fastpack.cli.main import main
from fastpack.view_build import build_views, save_views

from .conftest import write_tars

ONE = IndexOptions(workers=1)


def _indexed(tmp_path: Path, name: str, count: int, names: list[str]) -> Path:
    src = write_tars(
        tmp_path / f"{name}-tars", count, label=lambda i: names[i % len(names)].encode()
    )
    out = tmp_path / name
    index_shards([src], out, ONE)
    return out


def test_make_loader_views_and_mixes(tmp_path: Path) -> None:
    out = _indexed(tmp_path, "a", 12, ["dog", "cat"])
    loader = make_loader(
        Dataset(out, transform=CenterCrop(16)), batch_size=5, num_workers=2, shuffle=True
    )
    labels = np.concatenate([y.numpy() for _, y in loader])
    assert Counter(labels.tolist()) == {0: 6, 1: 6}  # cat 0, dog 1
    save_views(out, build_views(out, split="train:0.75,val:0.25", seed=1))
    train, val = Dataset(out, view="train"), Dataset(out, view="val")
    assert len(train) + len(val) == 12
    assert len(val) >= 1
    dogs = build_views(out, "dogs", classes=["dog"])[0]
    save_views(out, [dogs])
    assert {int(Dataset(out, view="dogs")[i][1]) for i in range(6)} == {1}
    other = _indexed(tmp_path, "b", 6, ["cat", "dog"])
    mix = Mix(
        [
            (Dataset(out, transform=CenterCrop(8)), 0.5),
            (Dataset(other, transform=CenterCrop(8)), 0.5),
        ],
        epoch_size=10,
        seed=3,
    )
    mix.set_epoch(0)
    mixed = np.concatenate([y.numpy() for _, y in make_loader(mix, batch_size=4, num_workers=0)])
    assert len(mixed) == 10
    assert set(mixed.tolist()) <= {0, 1}


def test_info_names_the_shard_root(tmp_path: Path, capsys: object) -> None:
    out = _indexed(tmp_path, "c", 4, ["x"])
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "c-tars" in text


def test_a_loader_resumes_over_an_indexed_dataset(tmp_path: Path) -> None:
    """A loader's state saved part way through an epoch of an indexed dataset resumes to the
    batches an uninterrupted loader reads, and is refused over a dataset indexed elsewhere."""
    out = _indexed(tmp_path, "r", 16, ["dog", "cat", "cow", "ant"])

    def loader(root: Path = out) -> FastpackLoader:
        dataset = Dataset(root, transform=CenterCrop(8))
        dataset.set_epoch(1)
        made = make_loader(dataset, batch_size=3, num_workers=0, shuffle=True)
        assert isinstance(made, FastpackLoader)
        return made

    expected = [y.tolist() for _, y in loader()]
    first = loader()
    batches = iter(first)
    seen = [next(batches)[1].tolist() for _ in range(2)]
    state = first.state_dict()
    second = loader()
    second.load_state_dict(state)
    assert seen + [y.tolist() for _, y in second] == expected
    other = _indexed(tmp_path, "s", 16, ["dog", "cat", "cow", "ant"])
    with pytest.raises(ValueError, match="dataset"):
        loader(other).load_state_dict(state)
