"""Persistent workers of a `StreamingLoader` read on into the next epoch while the trainer takes
this one's last batches (`run_on`, `laps`): every iteration still yields the batches, in the
order, and saves the state that a loader whose workers restart each epoch yields and saves,
whatever the trainer does between epochs (the next epoch, a jump with `set_epoch`, the same
epoch again, an epoch left before its end, a resume)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.reader import RandomResizedCrop, StreamingDataset, make_loader
from fastpack.reader.streaming.laps import EpochLaps
from fastpack.reader.streaming.run_on import STALE, RunOn, Tagged

from tests.reader.streaming._streaming_data import build_small

TIMEOUT = 60  # seconds a worker may take per batch; a hung worker fails the test
BATCH = 7

Batches = list[tuple[np.ndarray, list[int]]]


@pytest.fixture
def built(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """120 samples in shards of a few samples each."""
    return build_small(make_image_folder(classes=4, per_class=30, size=40), tmp_path / "ds")


def _dataset(built: Path, **options: Any) -> StreamingDataset:
    return StreamingDataset(
        built, transform=RandomResizedCrop(16), seed=5, shuffle_window=3, **options
    )


def _loader(dataset: StreamingDataset, *, persistent: bool, workers: int = 2) -> Any:
    return make_loader(
        dataset,
        batch_size=BATCH,
        num_workers=workers,
        persistent_workers=persistent,
        timeout=TIMEOUT,
    )


def _read(batches: Iterable[Any], limit: int | None = None) -> Batches:
    out = []
    for images, labels in batches:
        out.append((images.numpy().copy(), labels.tolist()))
        if len(out) == limit:
            break
    return out


def _same(got: Batches, want: Batches, what: str) -> None:
    assert len(got) == len(want), what
    for k, ((images, labels), (want_images, want_labels)) in enumerate(zip(got, want, strict=True)):
        assert labels == want_labels, f"{what}: batch {k}"
        np.testing.assert_array_equal(images, want_images, err_msg=f"{what}: batch {k}")


# (epoch, batches read: None for all of them) of each iteration in turn
STEPS = [(0, None), (1, None), (2, 2), (2, None), (5, None), (5, None), (5, None), (6, None)]


@pytest.mark.parametrize("world", [1, 8])  # 8 ranks: rank 0's two streams of 7 and 8 samples
def test_each_iteration_yields_what_restarted_workers_yield(built: Path, world: int) -> None:
    ranks = {} if world == 1 else {"rank": 0, "world_size": world}
    running, restarting = _dataset(built, **ranks), _dataset(built, **ranks)
    run_on, reference = _loader(running, persistent=True), _loader(restarting, persistent=False)
    assert run_on._laps is not None
    assert reference._laps is None
    for epoch, limit in STEPS:
        running.set_epoch(epoch)
        restarting.set_epoch(epoch)
        assert len(run_on) == len(reference)
        batches = iter(run_on)
        assert len(batches) == len(reference)
        got, want = _read(batches, limit), _read(reference, limit)
        what = f"epoch {epoch}, {limit or 'all'} batches"
        _same(got, want, what)
        assert run_on.state_dict() == reference.state_dict(), what
        if limit is None:
            assert next(batches, None) is None


def test_the_streams_of_uneven_workers_stay_in_turn_across_epochs(built: Path) -> None:
    """Rank 0 of 8 reads 15 samples: a worker's stream of one batch, the other's of two; over
    many epochs the run-on streams keep their turns (the shorter one pads its epochs)."""
    rank_0 = {"rank": 0, "world_size": 8}
    running, restarting = _dataset(built, **rank_0), _dataset(built, **rank_0)
    run_on, reference = _loader(running, persistent=True), _loader(restarting, persistent=False)
    assert len(run_on) == 3
    for epoch in range(8):
        running.set_epoch(epoch)
        restarting.set_epoch(epoch)
        _same(_read(run_on), _read(reference), f"epoch {epoch}")
    stats = run_on.stats()
    assert stats.batches == 8 * 3  # the trainer's: its epochs' batches, no filler
    assert stats.samples == 8 * 15
    assert sum(w.batches for w in stats.workers) >= 8 * 3  # and what the workers made ahead


def test_a_resumed_epoch_restarts_the_streams(built: Path) -> None:
    """A state saved mid-epoch by a run-on loader resumes in another one (three workers) as it
    resumes in a loader whose workers restart, and the epochs after it follow."""
    saving = _dataset(built)
    loader = _loader(saving, persistent=True)
    saving.set_epoch(0)
    _read(loader)
    saving.set_epoch(1)
    _read(loader, 3)  # the workers have gone on into epoch 2 by now
    state = loader.state_dict()
    assert state["epoch"] == 1

    running, restarting = _dataset(built), _dataset(built)
    run_on = _loader(running, persistent=True, workers=3)
    reference = _loader(restarting, persistent=False, workers=3)
    for lo in (run_on, reference):
        _read(lo, 1)  # workers started over epoch 0, then told to resume
        lo.load_state_dict(state)
    for epoch in (1, 2, 3):
        running.set_epoch(epoch)
        restarting.set_epoch(epoch)
        assert len(run_on) == len(reference)
        _same(_read(run_on), _read(reference), f"epoch {epoch}")


class _Epochs:
    """Epochs whose stream reads `sizes[epoch]` batches, each `(epoch, k)`; at most `rounds`."""

    def __init__(self, sizes: dict[int, int], rounds: int) -> None:
        self.sizes, self.rounds = sizes, rounds
        self.opened: list[int] = []

    def open_epoch(self, epoch: int) -> tuple[Iterator[Any], int]:
        self.opened.append(epoch)
        return iter([(epoch, k) for k in range(self.sizes[epoch])]), self.rounds


def test_a_stream_pads_each_epoch_to_its_ranks_longest_and_runs_on() -> None:
    run_on = RunOn()
    items = run_on.stream(_Epochs({3: 1, 4: 2, 5: 0}, rounds=2), 3)
    assert [next(items) for _ in range(6)] == [
        Tagged(0, (3, 0)),
        Tagged(0, None),  # a filler: another stream reads 2 batches of epoch 3
        Tagged(1, (4, 0)),
        Tagged(1, (4, 1)),
        Tagged(2, None),
        Tagged(2, None),
    ]


def test_a_restarted_stream_hands_out_stale_items_without_reading() -> None:
    run_on = RunOn()
    epochs = _Epochs({0: 5, 1: 5}, rounds=5)
    items = run_on.stream(epochs, 0)
    assert next(items) == Tagged(0, (0, 0))
    run_on.restart(repeat=True)
    assert [next(items) for _ in range(8)] == [STALE] * 8
    assert epochs.opened == [0]
    repeated = run_on.stream(epochs, 1)
    assert [next(repeated) for _ in range(6)][4:] == [Tagged(0, (1, 4)), Tagged(1, (1, 0))]


def test_a_stream_longer_than_its_ranks_longest_is_an_error() -> None:
    items = RunOn().stream(_Epochs({0: 3}, rounds=2), 0)
    with pytest.raises(RuntimeError, match="yielded 3 batches, more than the 2"):
        list(items)


def test_a_view_takes_its_lap_and_the_laps_follow_the_epochs() -> None:
    laps = EpochLaps(RunOn())
    laps.restart(4, fresh=True)
    lap_0 = [Tagged(0, "a"), Tagged(0, None), Tagged(0, "b"), Tagged(0, None)]
    inner = iter([*lap_0, Tagged(1, "c"), Tagged(1, "d")])
    view = laps.view(inner, 4, 2)
    assert len(view) == 2
    assert list(view) == ["a", "b"]
    assert laps.continues(5)
    assert not laps.continues(4)
    assert list(laps.view(inner, 5, 2)) == ["c", "d"]
    laps.restart(5, fresh=True)  # epoch 5 read twice: the streams repeat it
    assert laps.run_on.step == 0
    view = laps.view(iter([Tagged(0, "e"), Tagged(1, "f")]), 5, 2)
    with pytest.raises(RuntimeError, match="went on past epoch 5 after 1 of its 2 batches"):
        list(view)
