"""The one line that says what limits training, from a loader's counts alone; its thresholds are
also `fastpack bench`'s (`fastpack.bench.verdict`). Checked in this order:

1. the training step: the trainer waits at most `TRAINER_WAIT_OK` of the time;
2. no per-worker counts (DALI): the loader, without saying which part of it;
3. loading in the training process (`num_workers=0`);
4. the hand-over: the workers are busy less than `DECODE_BOUND` of their time, yet the trainer
   waits (`fastpack bench` says "loader" for what is not decoding nor the network);
5. decoding or reading, whichever takes more of the workers' time; reading is fetching where
   the workers fetched bytes.
"""

from __future__ import annotations

import os

from .loader_stats import WorkerStats, time_shares

TRAINER_WAIT_OK = 0.05  # the trainer waits at most this share of the time: loading keeps up
DECODE_BOUND = 0.8  # the share of the capacity at which decoding (or the workers) is the limit
DALI_GPU = "make_loader(..., loader='dali', device='gpu')"
NVIMGCODEC = "make_loader(..., loader='nvimgcodec')"
DEVICE_DECODE_BOUND = 0.5  # the share of the trainer's wait at which its own decode is the limit
FETCH_HINT = (
    "raise StreamingDataset(fetch=FetchOptions(threads=..., part_threads=...)) and prefetch, "
    "or copy the dataset to local disk first (fetch_dataset)"
)


def decode_hint(workers: int, cpus: int) -> str:
    """What to do when decoding is the limit, with `workers` decoding on `cpus` cores."""
    gpu = f"decode on the GPU ({NVIMGCODEC}, or DALI's {DALI_GPU})"
    if workers < cpus:
        return f"add workers ({workers} of {cpus} cores in use) or {gpu}"
    return f"every core decodes already; {gpu}"


def device_decode_verdict(
    wait_share: float, decode_seconds: float, wait_seconds: float
) -> str | None:
    """The verdict of a loader whose trainer decodes on its device (`loader='nvimgcodec'`) when
    that decode takes at least `DEVICE_DECODE_BOUND` of a wait over `TRAINER_WAIT_OK`; None
    otherwise (the workers' verdict stands)."""
    if wait_share <= TRAINER_WAIT_OK or decode_seconds < DEVICE_DECODE_BOUND * wait_seconds:
        return None
    return (
        f"the trainer waits on data {wait_share:.0%} of the time, "
        f"{decode_seconds / wait_seconds:.0%} of it decoding on its device: the device decode "
        "is the bottleneck; try larger batches (one decode call per batch), or on the CPU "
        "backend more decode_threads"
    )


def step_bound(wait_share: float) -> str:
    """The verdict when the trainer waits at most `TRAINER_WAIT_OK` of the time."""
    return (
        f"the trainer waits {wait_share:.0%} of the time: data loading is not your "
        "bottleneck; the training step is"
    )


def usable_cpus() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def loader_verdict(  # noqa: PLR0913 -- keyword inputs
    *,
    batches: int,
    wait_share: float,
    seconds: float,
    workers: tuple[WorkerStats, ...],
    in_process: bool,
    cpus: int,
) -> str:
    """The verdict on an interval of `seconds` in which the trainer took `batches` batches and
    waited `wait_share` of the time for them, made by `workers` (see the module docstring)."""
    if batches == 0:
        return "no batch was taken in this interval"
    if wait_share <= TRAINER_WAIT_OK:
        return step_bound(wait_share)
    waits = f"the trainer waits on data {wait_share:.0%} of the time: "
    if not workers:
        return waits + (
            "the loader is the bottleneck, and counts nothing per thread to say where; raise "
            f"num_workers (DALI's threads) or decode on the GPU ({DALI_GPU})"
        )
    shares = time_shares(workers, seconds)
    if in_process:
        return waits + (
            f"it loads its own batches (num_workers=0; {shares['decoding']:.0%} of the time "
            f"decoding, {shares['reading']:.0%} reading); give make_loader workers"
        )
    return waits + _workers_verdict(shares, workers, cpus)


def _workers_verdict(shares: dict[str, float], workers: tuple[WorkerStats, ...], cpus: int) -> str:
    """What limits workers that do not keep up: the hand-over, decoding, fetching or reading."""
    decoding, reading = shares["decoding"], shares["reading"]
    if 1 - shares["idle"] < DECODE_BOUND:
        return (
            f"the workers are idle {shares['idle']:.0%} of the time: the hand-over of batches "
            "is the bottleneck (the workers' start, an epoch's start, batches of uneven cost, "
            "which reach the trainer in order, passing batches over); raise prefetch_factor, "
            "try larger batches"
        )
    if decoding >= reading:
        return (
            f"decode-bound (workers spend {decoding:.0%} decoding); "
            f"{decode_hint(len(workers), cpus)}"
        )
    if sum(w.bytes_fetched for w in workers) > 0:
        return f"fetch-bound (workers spend {reading:.0%} waiting for shards); {FETCH_HINT}"
    return (
        f"read-bound (workers spend {reading:.0%} reading shards); check the disk "
        "(io='pread' on network file systems)"
    )
