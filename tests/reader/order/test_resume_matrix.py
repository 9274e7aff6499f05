"""Elastic resume of make_loader over a map-style Dataset: stop every rank at a random batch,
resume with another number of ranks, workers and batch size, and check that over the epoch
every sample was read exactly once (apart from the rank padding of the last segment)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastpack.reader import CenterCrop, Dataset, make_loader

from ..conftest import Built
from .conftest import SAMPLES

LAYOUTS = list(itertools.product((1, 2, 4), (0, 1, 3), (7, 64)))


def _loaders(
    path: Path, world: int, workers: int, batch: int, monkeypatch: pytest.MonkeyPatch
) -> list[Any]:
    loaders = []
    for rank in range(world):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", str(world))
        ds = Dataset(path, transform=CenterCrop(8))
        loaders.append(make_loader(ds, batch_size=batch, num_workers=workers, seed=3))
    return loaders


def _take(loaders: list[Any], batches: int | None) -> tuple[list[int], Iterator[Any] | None]:
    """Labels of the first `batches` batches of every rank (None: to the end)."""
    labels: list[int] = []
    iterators = [iter(loader) for loader in loaders]
    lengths = {len(loader) for loader in loaders}
    assert len(lengths) == 1  # every rank the same number of batches
    steps = lengths.pop() if batches is None else batches
    for _ in range(steps):
        for it in iterators:
            _, y = next(it)
            labels += y.tolist()
    return labels, None


@pytest.mark.parametrize(("world", "workers", "batch"), LAYOUTS)
def test_resume_elsewhere_reads_each_sample_once(
    one_class_per_sample: Path,
    monkeypatch: pytest.MonkeyPatch,
    world: int,
    workers: int,
    batch: int,
) -> None:
    rng = random.Random(f"{world}-{workers}-{batch}")
    epoch = 2
    loaders = _loaders(one_class_per_sample, world, workers, batch, monkeypatch)
    for loader in loaders:
        loader.dataset.set_epoch(epoch)
    stop = rng.randrange(0, len(loaders[0]))
    seen, _ = _take(loaders, stop)
    states = [loader.state_dict() for loader in loaders]
    assert all(s == states[0] for s in states)  # every rank holds the same state
    assert states[0]["epoch"] == epoch
    assert states[0]["position"] == min(SAMPLES, stop * batch * world)
    del loaders

    # a second segment on another layout, stopped again, then a third to the end
    layouts = [x for x in LAYOUTS if x != (world, workers, batch)]
    second, third = rng.sample(layouts, 2)
    state = states[0]
    finisher = world if state["position"] == SAMPLES else 0  # the segment that ends the epoch
    for k, (w2, k2, b2) in enumerate((second, third)):
        resumed = _loaders(one_class_per_sample, w2, k2, b2, monkeypatch)
        for loader in resumed:
            loader.load_state_dict(state)
            assert loader.dataset.epoch == epoch
        more = None if k == 1 else rng.randrange(0, len(resumed[0]) + 1)
        labels, _ = _take(resumed, more)
        seen += labels
        state = resumed[0].state_dict()
        if state["position"] == SAMPLES and not finisher:
            finisher = w2
        del resumed
    assert state["position"] == SAMPLES
    counts = Counter(seen)
    assert sorted(counts) == list(range(SAMPLES))  # none lost
    repeats = sum(c - 1 for c in counts.values())
    assert repeats <= finisher - 1  # only the rank padding of the segment that ends the epoch


def test_state_names_the_dataset_and_is_refused_elsewhere(
    build_dataset: Callable[..., Built], one_class_per_sample: Path
) -> None:
    loader = make_loader(Dataset(one_class_per_sample), batch_size=4, num_workers=0)
    state = loader.state_dict()
    assert set(state) == {"format", "version", "order", "seed", "shuffle", "epoch", "position"}
    assert len(state["order"]["dataset"]) == 64
    other = make_loader(Dataset(build_dataset().path), batch_size=4, num_workers=0)
    with pytest.raises(ValueError, match="saved reading dataset"):
        other.load_state_dict(state)
    reseeded = make_loader(Dataset(one_class_per_sample), batch_size=4, num_workers=0, seed=9)
    with pytest.raises(ValueError, match="seed=0"):
        reseeded.load_state_dict(state)
    with pytest.raises(ValueError, match="not a fastpack loader state"):
        loader.load_state_dict({"epoch": 1})
    with pytest.raises(ValueError, match="outside"):
        loader.load_state_dict({**state, "position": SAMPLES + 1})


def test_state_between_epochs(one_class_per_sample: Path) -> None:
    ds = Dataset(one_class_per_sample)
    loader = make_loader(ds, batch_size=64, num_workers=0)
    for _ in loader:
        pass
    assert loader.state_dict()["position"] == SAMPLES  # the epoch is done
    ds.set_epoch(1)
    assert loader.state_dict() == {**loader.state_dict(), "epoch": 1, "position": 0}
    # resuming at the end of an epoch gives no batch of it
    finished = make_loader(Dataset(one_class_per_sample), batch_size=64, num_workers=0)
    finished.load_state_dict({**loader.state_dict(), "epoch": 0, "position": SAMPLES})
    assert len(finished) == 0
    assert list(finished) == []
