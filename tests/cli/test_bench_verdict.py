"""The parts of `fastpack bench` that need no dataset: the verdict on given measurements, and
the timed loop on a fake loader."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from fastpack.formats import FastpackError

from fastpack.bench import LoaderResult, Setting, Timing, decide
from fastpack.bench.payloads import sample_ids
from fastpack.bench.timing import Batch, Limits, time_loader


def measured(name: str, rate: float, wait: float = 1.0) -> LoaderResult:
    timing = Timing(first_batch_seconds=0.5, pass_rates=(rate,), pass_waits=(wait,), images=999)
    return LoaderResult(name=name, timing=timing)


def setting(**given: Any) -> Setting:
    values: dict[str, Any] = {
        "ceiling": 1000.0,
        "step_ms": 0.0,
        "remote": False,
        "workers": 4,
        "cpus": 8,
        "batch_size": 64,
        "batches_per_epoch": 1000,
    }
    return Setting(**{**values, **given})


def test_decode_bound_map_style() -> None:
    results = [measured("map-style", 950), measured("streaming", 500), measured("dali-cpu", 600)]
    verdict = decide(results, setting())
    assert (verdict.use, verdict.bottleneck) == ("map-style", "decode")
    assert verdict.lines[0] == (
        "use map-style: 1.9x streaming, 1.6x dali-cpu; at 95% of the decode ceiling"
    )
    assert verdict.lines[1].startswith("decoding is the bottleneck: add workers (4 of 8 cores")
    assert "loader='dali', device='gpu'" in verdict.lines[1]
    assert "--step-ms 0" in verdict.lines[2]


def test_decode_bound_on_every_core_points_at_the_gpu() -> None:
    verdict = decide([measured("map-style", 900)], setting(workers=8))
    assert (
        verdict.lines[0] == "use map-style: the only loader measured; at 90% of the decode ceiling"
    )
    assert (
        "every core decodes already; decode on the GPU (make_loader(..., loader='nvimgcodec')"
        in verdict.lines[1]
    )


def test_loader_bound() -> None:
    results = [measured("map-style", 400), measured("streaming", 380)]
    verdict = decide(results, setting())
    assert (verdict.use, verdict.bottleneck) == ("map-style", "loader")
    assert verdict.lines[1].startswith(
        "map-style runs at 40% of the decode ceiling: the loader, not decoding, is the bottleneck"
    )


def test_network_bound_against_the_local_copy() -> None:
    results = [measured("map-style", 900), measured("streaming", 360)]
    verdict = decide(results, setting(remote=True))
    assert (verdict.use, verdict.bottleneck) == ("map-style", "network")
    assert verdict.lines[0].startswith("use map-style over the local copy: 2.5x streaming")
    assert verdict.lines[1].startswith(
        "streaming from the URL runs at 40% of the local copy (map-style): the network is the "
        "bottleneck; raise StreamingDataset(fetch=FetchOptions("
    )


def test_network_bound_against_the_ceiling_without_a_local_copy() -> None:
    results = [LoaderResult(name="map-style", skipped="not cached"), measured("streaming", 300)]
    verdict = decide(results, setting(remote=True))
    assert (verdict.use, verdict.bottleneck) == ("streaming", "network")
    assert "30% of the decode ceiling: the network is likely the bottleneck" in verdict.lines[1]


def test_a_fast_url_is_not_network_bound() -> None:
    verdict = decide([measured("streaming", 850)], setting(remote=True))
    assert verdict.bottleneck == "decode"


def test_trainer_not_waiting() -> None:
    results = [measured("map-style", 500, wait=0.02), measured("streaming", 480, wait=0.04)]
    verdict = decide(results, setting(step_ms=100))
    assert (verdict.use, verdict.bottleneck) == ("map-style", "trainer")
    assert verdict.lines[1] == (
        "the trainer waits 2% of the time: data loading is not your bottleneck; the training "
        "step is"
    )
    assert len(verdict.lines) == 2  # a step time was given: no advice to give one


def test_a_waiting_trainer_behind_a_slow_loader() -> None:
    # the step takes 64 images per 100 ms: 640 images/s, which decoding alone could give
    verdict = decide([measured("map-style", 300, wait=0.4)], setting(step_ms=100))
    assert verdict.bottleneck == "loader"
    assert verdict.lines[1].startswith(
        "the trainer waits 40% of the time; decoding alone gives 1,000 images/s for a step that "
        "takes 640: the loader is the bottleneck (reading shards"
    )


def test_a_waiting_trainer_behind_decoding() -> None:
    # the step takes 64 images per 50 ms: 1,280 images/s, more than decoding alone gives
    verdict = decide([measured("map-style", 700, wait=0.3)], setting(step_ms=50))
    assert verdict.bottleneck == "decode"
    assert verdict.lines[1].startswith(
        "the trainer waits 30% of the time; decoding is the bottleneck: the step takes 1,280 "
        "images/s, decoding alone gives 1,000; add workers (4 of 8 cores in use)"
    )


def test_a_url_under_a_step_is_held_to_what_the_step_takes() -> None:
    results = [measured("streaming", 300, wait=0.5)]
    verdict = decide(results, setting(remote=True, step_ms=100))  # the step takes 640/s
    assert verdict.bottleneck == "network"
    assert "runs at 47% of what the step takes: the network is likely" in verdict.lines[1]


def test_a_later_loader_must_be_clearly_faster() -> None:
    close = [measured("map-style", 500), measured("dali-cpu", 520)]
    assert decide(close, setting()).use == "map-style"  # within 5%: the simpler loader
    clear = [measured("map-style", 500), measured("dali-cpu", 600)]
    assert decide(clear, setting()).use == "dali-cpu"


def test_short_epochs_are_pointed_out() -> None:
    verdict = decide([measured("map-style", 500)], setting(batches_per_epoch=5))
    assert any(line.startswith("an epoch is only 5 batches") for line in verdict.lines)


def test_passes_far_apart_are_pointed_out() -> None:
    steady = Timing(
        first_batch_seconds=0.5, pass_rates=(500, 520, 480), pass_waits=(1, 1, 1), images=999
    )
    noisy = Timing(
        first_batch_seconds=0.5, pass_rates=(500, 300, 480), pass_waits=(1, 1, 1), images=999
    )
    quiet = decide([LoaderResult(name="map-style", timing=steady)], setting(ceiling_spread=0.1))
    assert not any("passes differ" in line for line in quiet.lines)
    busy = decide([LoaderResult(name="map-style", timing=noisy)], setting(ceiling_spread=0.1))
    assert "passes differ by up to 42%: something else is using this machine" in busy.lines[2]
    ceiling = decide([LoaderResult(name="map-style", timing=steady)], setting(ceiling_spread=0.3))
    assert "passes differ by up to 30%" in ceiling.lines[2]


def test_nothing_measured() -> None:
    results = [
        LoaderResult(name="map-style", skipped="PyTorch is not installed"),
        LoaderResult(name="dali-cpu", skipped="not installed"),
    ]
    verdict = decide(results, setting())
    assert (verdict.use, verdict.bottleneck) == (None, None)
    assert verdict.lines == (
        "no loader was measured (map-style: PyTorch is not installed; dali-cpu: not installed)",
    )


class FakeLoader:
    def __init__(self, batches: Iterable[Batch]) -> None:
        self.batches: Iterable[Batch] = batches
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_time_loader_counts_images_passes_and_waiting() -> None:
    loader = FakeLoader([([0] * 4, None), ([0] * 3, None)])  # an epoch of 7 images, 2 batches
    limits = Limits(seconds=60, batches=3, passes=2, step_ms=5, warmup=2)
    timing = time_loader(lambda: loader, limits, "fake")
    assert loader.closed
    assert timing.images == (4 + 3) + (4 + 3 + 4) + (3 + 4 + 3)  # warm-up, 3 batches a pass
    assert len(timing.pass_rates) == 2
    assert 0 < timing.wait_share < 0.5  # next() is instant, the 5 ms step is not
    assert timing.images_per_second < 11 / 0.015


def slow_batches() -> Iterator[Batch]:
    while True:
        time.sleep(0.01)
        yield ([0] * 2,)


def test_time_loader_ends_a_pass_after_its_seconds() -> None:
    limits = Limits(seconds=0.1, batches=None, passes=1, step_ms=0, warmup=1)
    timing = time_loader(lambda: FakeLoader(slow_batches()), limits, "slow")
    assert 2 + 2 * 5 <= timing.images <= 2 + 2 * 11  # about 10 batches in 0.1 s
    assert timing.wait_share > 0.9  # pure loading: all the time is spent waiting


def test_an_empty_loader_is_an_error() -> None:
    limits = Limits(seconds=1, batches=None, passes=1, step_ms=0, warmup=1)
    with pytest.raises(FastpackError, match="empty: the loader yielded no batch in an epoch"):
        time_loader(lambda: FakeLoader([]), limits, "empty")


def test_sample_ids_spread_over_the_dataset() -> None:
    assert sample_ids(0) == ()
    assert sample_ids(3) == (0, 1, 2)
    ids = sample_ids(10_000, 5)
    assert ids == (0, 2500, 5000, 7499, 9999)
