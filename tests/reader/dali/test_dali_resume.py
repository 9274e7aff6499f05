"""`make_loader(loader="dali")` in fastpack's order (CPU DALI): the torch loader's order sample for
sample, a state saved by either loader resumed by either with other ranks, threads and batch
size, prefetched batches dropped on a resume, views, and states of other data refused."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.formats import MANIFEST_NAME, read_manifest
from fastpack.formats.manifest import manifest_digest
from fastpack.reader import CenterCrop, Dataset, make_dali_loader, make_loader

from ..conftest import one_class_per_sample as dataset_of_one_class_per_sample

SAMPLES = 37  # one class per sample: a batch's labels say which samples it holds


@pytest.fixture(scope="module")
def one_class_per_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dali-resume")
    return dataset_of_one_class_per_sample(root, SAMPLES, size=(12, 14), shard_size=8_000)


class Ranks:
    """Loaders of every rank of a `world`-rank job (RANK and WORLD_SIZE, as torchrun sets)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
        self.monkeypatch, self.path = monkeypatch, path

    def make(
        self, world: int, batch: int, *, dali: bool = True, threads: int = 1, **options: Any
    ) -> list[Any]:
        loaders = []
        view, epoch = options.pop("view", None), options.pop("epoch", 0)
        seed = options.pop("seed", 3)
        for rank in range(world):
            self.monkeypatch.setenv("RANK", str(rank))
            self.monkeypatch.setenv("WORLD_SIZE", str(world))
            ds = Dataset(self.path, transform=CenterCrop(8), view=view)
            ds.set_epoch(epoch)
            options.update(loader="dali" if dali else "torch", seed=seed)
            loaders.append(
                make_loader(ds, batch_size=batch, num_workers=threads if dali else 0, **options)
            )
        return loaders


@pytest.fixture
def ranks(monkeypatch: pytest.MonkeyPatch, one_class_per_sample: Path) -> Ranks:
    return Ranks(monkeypatch, one_class_per_sample)


def take(loaders: list[Any], batches: int | None) -> list[int]:
    """The labels of the next `batches` batches of every rank, rank after rank in each step
    (None: to the end of the iteration); every rank has as many batches."""
    assert len({len(loader) for loader in loaders}) == 1
    steps = len(loaders[0]) if batches is None else batches
    iterators = [iter(loader) for loader in loaders]
    labels: list[int] = []
    for _ in range(steps):
        for it in iterators:
            labels += next(it)[1].tolist()
    return labels


def batches(loader: Any) -> list[list[int]]:
    return [labels.tolist() for _, labels in loader]


@pytest.mark.parametrize(("world", "batch", "drop_last"), [(1, 5, False), (3, 4, True)])
def test_dali_reads_the_torch_loaders_order(
    ranks: Ranks, world: int, batch: int, drop_last: bool
) -> None:
    dali = ranks.make(world, batch, threads=2, drop_last=drop_last)
    torch = ranks.make(world, batch, dali=False, drop_last=drop_last)
    for epoch in (0, 2):
        for a, b in zip(dali, torch, strict=True):
            a.feed.dataset.set_epoch(epoch)
            b.dataset.set_epoch(epoch)
            assert len(a) == len(b)
            assert batches(a) == batches(b)  # sample for sample, the last batch partial too


@pytest.mark.parametrize(
    ("before", "after"),
    [((1, 8, 1), (2, 5, 2)), ((3, 4, 2), (1, 7, 1)), ((2, 3, 1), (4, 2, 3))],
)
def test_resume_elsewhere_reads_each_sample_once(
    ranks: Ranks, before: tuple[int, int, int], after: tuple[int, int, int]
) -> None:
    """Stop every rank after 2 batches (DALI has prefetched more), resume with other ranks,
    batch size and threads: the epoch's samples once each, but the last rank padding."""
    (w1, b1, t1), (w2, b2, t2) = before, after
    first = ranks.make(w1, b1, threads=t1, epoch=1)
    seen = take(first, 2)
    states = [loader.state_dict() for loader in first]
    assert all(state == states[0] for state in states)
    assert (states[0]["epoch"], states[0]["position"]) == (1, 2 * b1 * w1)
    second = ranks.make(w2, b2, threads=t2)
    for loader in second:
        loader.load_state_dict(states[0])
        assert loader.feed.dataset.epoch == 1
    left = SAMPLES - 2 * b1 * w1
    assert len(second[0]) == math.ceil(math.ceil(left / w2) / b2)
    seen += take(second, None)
    assert second[0].state_dict()["position"] == SAMPLES
    counts = Counter(seen)
    assert sorted(counts) == list(range(SAMPLES))
    assert sum(c - 1 for c in counts.values()) == -left % w2  # the rank padding


def test_torch_and_dali_states_resume_each_other(ranks: Ranks) -> None:
    torch = ranks.make(2, 4, dali=False)
    dali = ranks.make(2, 4, threads=2)
    seen = take(torch, 3)
    assert take(dali, 3) == seen  # the same batches, read by either
    state = torch[0].state_dict()
    assert dali[0].state_dict() == state  # DALI counts batches handed out, not prefetched
    resumed = ranks.make(1, 6, threads=1)[0]
    resumed.load_state_dict(state)
    seen += take([resumed], 2)
    state = resumed.state_dict()
    assert state["position"] == 24 + 12
    back = ranks.make(3, 2, dali=False)
    for loader in back:
        loader.load_state_dict(state)
    seen += take(back, None)
    counts = Counter(seen)
    assert sorted(counts) == list(range(SAMPLES))
    assert sum(c - 1 for c in counts.values()) == 2  # one sample left, over 3 ranks


def test_loading_a_state_drops_prefetched_batches(ranks: Ranks) -> None:
    loader = ranks.make(1, 3, threads=2, prefetch_factor=3)[0]
    it = iter(loader)
    for _ in range(2):
        next(it)
    state = loader.state_dict()
    following = [next(it)[1].tolist() for _ in range(4)]
    loader.load_state_dict(state)
    assert len(loader) == -(-(SAMPLES - 6) // 3)
    assert batches(loader)[:4] == following
    assert loader.state_dict()["position"] == SAMPLES
    loader.load_state_dict({**state, "position": SAMPLES})  # a finished epoch: nothing left
    assert (len(loader), list(loader)) == (0, [])
    loader.feed.dataset.set_epoch(1)
    assert sorted(y for batch in batches(loader) for y in batch) == list(range(SAMPLES))


def test_an_unfinished_iteration_is_dropped(ranks: Ranks) -> None:
    loader = ranks.make(1, 4, threads=2)[0]
    whole = batches(loader)
    for _ in loader:
        break
    assert batches(loader) == whole  # iter() starts the epoch again, as the torch loader's


def _write_view(path: Path, name: str, rows: list[int], balance: str | None = None) -> None:
    view = pytest.importorskip("fastpack.formats.view")

    manifest = read_manifest(path / MANIFEST_NAME)
    made = view.View(
        name=name,
        dataset=manifest_digest(manifest),
        num_samples=manifest.num_samples,
        rows=np.array(rows),
        balance=balance,
    )
    view.write_view_file(path / view.view_file_name(name), made)


@pytest.mark.parametrize("balance", [None, "class"])
def test_dali_reads_a_view(ranks: Ranks, one_class_per_sample: Path, balance: str | None) -> None:
    name = f"odd-{balance}"
    rows = list(range(1, SAMPLES, 2))
    _write_view(one_class_per_sample, name, rows, balance)
    labels = Dataset(one_class_per_sample).labels[rows].tolist()
    dali = ranks.make(2, 4, threads=1, view=name)
    torch = ranks.make(2, 4, dali=False, view=name)
    for a, b in zip(dali, torch, strict=True):
        assert batches(a) == batches(b)
    seen = take(dali, None)
    assert set(seen) == set(labels)
    assert dali[0].state_dict()["order"]["view"]["name"] == name


def test_a_state_of_other_data_is_refused(ranks: Ranks, one_class_per_sample: Path) -> None:
    _write_view(one_class_per_sample, "evens", list(range(0, SAMPLES, 2)))
    whole = ranks.make(1, 4, dali=False)[0]
    of_view = ranks.make(1, 4, view="evens")[0]
    with pytest.raises(ValueError, match=r"saved reading dataset \w+ \(no view\); this loader "):
        of_view.load_state_dict(whole.state_dict())
    with pytest.raises(ValueError, match="saved with seed=3, this loader has seed=0"):
        ranks.make(1, 4, seed=0)[0].load_state_dict(whole.state_dict())


def test_a_state_of_another_dataset_is_refused(
    ranks: Ranks, build_dataset: Any, one_class_per_sample: Path
) -> None:
    other = Dataset(build_dataset().path, transform=CenterCrop(8))
    state = make_loader(other, batch_size=2, num_workers=0).state_dict()
    with pytest.raises(ValueError, match="the state was saved reading dataset"):
        ranks.make(1, 4)[0].load_state_dict(state)
    reader = make_dali_loader(one_class_per_sample, batch_size=4, transform=CenterCrop(8))
    with pytest.raises(ValueError, match="state_dict needs fastpack's order"):
        reader.state_dict()
