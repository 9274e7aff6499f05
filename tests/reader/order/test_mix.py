"""Mix: exact quotas per epoch, one class table, resume, and the refusals."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import cast

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.reader import (
    CenterCrop,
    Dataset,
    EpochBatchSampler,
    Mix,
    StreamingDataset,
    make_loader,
)
from fastpack.reader.torch_loader.dataloader import FastpackLoader

from ...conftest import jpeg_bytes


def _dataset(root: Path, name: str, classes: dict[str, int]) -> Path:
    """A dataset of `classes` (name: image count), images 12x12."""
    source = root / f"{name}-src"
    for c, (label, count) in enumerate(classes.items()):
        (source / label).mkdir(parents=True)
        for i in range(count):
            (source / label / f"{i}.jpg").write_bytes(jpeg_bytes(12, 12, seed=c * 100 + i))
    build(source, root / name, BuildOptions(workers=1, shard_size=40_000, progress=False))
    return root / name


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("mix")
    a = _dataset(root, "a", {"cat": 6, "dog": 6})  # 12 samples
    b = _dataset(root, "b", {"dog": 5, "emu": 40})  # 45 samples; "dog" shared by name
    return a, b


def _mix(paths: tuple[Path, Path], *, seed: int, epoch_size: int = 50) -> Mix:
    a, b = (Dataset(p, transform=CenterCrop(8)) for p in paths)
    return Mix([(a, 0.7), (b, 0.3)], epoch_size=epoch_size, seed=seed)


def test_each_epoch_meets_its_quotas_with_one_class_table(two: tuple[Path, Path]) -> None:
    mix = _mix(two, seed=5)
    assert mix.classes == ("cat", "dog", "emu")
    assert len(mix) == 50
    loader = make_loader(mix, batch_size=8, num_workers=2)
    labels_b = Dataset(two[1]).labels
    for epoch in range(3):
        mix.set_epoch(epoch)
        labels = np.concatenate([y.numpy() for _, y in loader])
        assert len(labels) == 50
        counts = Counter(labels.tolist())
        # source a (cat, dog) has 35 of the 50, b (dog, emu) 15; only a has cats, only b emus
        assert counts[0] + counts[1] + counts[2] == 50
        assert counts[2] <= 15 <= counts[2] + counts[1]
        assert counts[0] <= 35
    # source b's 15 per epoch read its 45 samples once over three epochs (its own permutation)
    assert isinstance(loader, FastpackLoader)
    order = cast(EpochBatchSampler, loader.batch_sampler).epoch_order
    drawn = np.concatenate([order.samples(e, np.arange(50)) for e in range(3)])
    from_b = drawn[drawn >= 12] - 12
    assert sorted(from_b.tolist()) == list(range(45))
    assert Counter(labels_b[from_b].tolist()) == Counter(labels_b.tolist())


def test_mix_batches_carry_unified_labels(two: tuple[Path, Path]) -> None:
    mix = _mix(two, seed=1)
    images, labels = mix.__getitems__(list(range(0, 57, 4)))
    assert images.shape == (15, 8, 8, 3)
    names = [mix.classes[y] for y in labels.tolist()]
    a, b = Dataset(two[0]), Dataset(two[1])
    expected = sorted([a.classes[a.labels[i]] for i in range(0, 12, 4)] +
                      [b.classes[b.labels[i - 12]] for i in range(12, 57, 4)])  # fmt: skip
    assert sorted(names) == expected
    image, label = mix[20]
    assert mix.classes[int(label)] == b.classes[b.labels[8]]
    assert np.array_equal(image, Dataset(two[1], transform=CenterCrop(8))[8][0])


def test_mix_resumes_on_another_layout(two: tuple[Path, Path]) -> None:
    mix = _mix(two, seed=2)
    whole = make_loader(mix, batch_size=5, num_workers=0)
    mix.set_epoch(1)
    expected = Counter(np.concatenate([y.numpy() for _, y in whole]).tolist())
    mix = _mix(two, seed=2)
    first = make_loader(mix, batch_size=5, num_workers=2)
    mix.set_epoch(1)
    it, seen = iter(first), []
    for _ in range(4):
        seen += next(it)[1].tolist()
    state = first.state_dict()
    assert state["position"] == 20
    assert [s["weight"] for s in state["order"]["mix"]] == [0.7, 0.3]
    resumed = make_loader(_mix(two, seed=2), batch_size=7, num_workers=1)
    resumed.load_state_dict(state)
    for _, y in resumed:
        seen += y.tolist()
    assert Counter(seen) == expected
    other = make_loader(_mix(two, seed=2, epoch_size=60), batch_size=7, num_workers=0)
    with pytest.raises(ValueError, match="saved reading a mix"):
        other.load_state_dict(state)


def test_mix_refusals(two: tuple[Path, Path]) -> None:
    a = Dataset(two[0], transform=CenterCrop(8))
    with pytest.raises(ValueError, match="transform output shape"):
        Mix([(a, 1), (Dataset(two[1], transform=CenterCrop(16)), 1)], epoch_size=10)
    with pytest.raises(ValueError, match=r"lacks \['cls'\]"):
        Mix([(a, 1), (Dataset(two[1], transform=CenterCrop(8), fields=("jpg",)), 1)],
            epoch_size=10)  # fmt: skip
    with pytest.raises(ValueError, match="weights must be positive"):
        Mix([(a, 0)], epoch_size=10)
    with pytest.raises(TypeError, match="StreamingDataset"):
        Mix([(StreamingDataset(str(two[1])), 1)], epoch_size=10)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="differ from the mix's"):
        make_loader(Mix([(a, 1)], epoch_size=10, seed=3), batch_size=2, seed=4, num_workers=0)
    with pytest.raises(ValueError, match="loader='dali' reads one dataset's shards; a Mix is read"):
        make_loader(Mix([(a, 1)], epoch_size=10), batch_size=2, loader="dali")
