"""The verdict from counts alone, branch by branch; what a batch's rows are."""

from __future__ import annotations

import numpy as np
from fastpack.reader.fields import Padded
from fastpack.reader.stats import WorkerStats
from fastpack.reader.stats.batch_rows import batch_rows
from fastpack.reader.stats.verdict import device_decode_verdict, loader_verdict


def _worker(*, busy: float, read: float, decode: float, fetched: int = 0) -> WorkerStats:
    return WorkerStats(
        worker=0,
        batches=10,
        samples=80,
        busy_seconds=busy,
        read_seconds=read,
        decode_seconds=decode,
        allocate_seconds=busy - read - decode,
        fresh_blocks=0,
        bytes_read=1000,
        bytes_fetched=fetched,
        cache_hits=0,
        retries=0,
    )


def _verdict(wait: float, *workers: WorkerStats, in_process: bool = False, cpus: int = 8) -> str:
    return loader_verdict(
        batches=10,
        wait_share=wait,
        seconds=1.0,
        workers=workers,
        in_process=in_process,
        cpus=cpus,
    )


def test_a_trainer_that_hardly_waits_is_the_bottleneck() -> None:
    busy = _worker(busy=1.0, read=0.0, decode=1.0)
    assert _verdict(0.03, busy, busy) == (
        "the trainer waits 3% of the time: data loading is not your bottleneck; the training "
        "step is"
    )


def test_busy_workers_are_decode_fetch_or_read_bound() -> None:
    decoding = _worker(busy=0.95, read=0.1, decode=0.8)
    assert _verdict(0.23, decoding, decoding) == (
        "the trainer waits on data 23% of the time: decode-bound (workers spend 80% decoding); "
        "add workers (2 of 8 cores in use) or decode on the GPU (make_loader(..., "
        "loader='nvimgcodec'), or DALI's make_loader(..., loader='dali', device='gpu'))"
    )
    assert "every core decodes already" in _verdict(0.23, decoding, decoding, cpus=2)
    fetching = _worker(busy=0.9, read=0.7, decode=0.2, fetched=10)
    assert "fetch-bound (workers spend 70% waiting for shards); raise StreamingDataset(" in (
        _verdict(0.5, fetching)
    )
    reading = _worker(busy=0.9, read=0.7, decode=0.2)
    assert "read-bound (workers spend 70% reading shards)" in _verdict(0.5, reading)


def test_idle_workers_and_a_waiting_trainer_point_at_the_hand_over() -> None:
    idle = _worker(busy=0.5, read=0.0, decode=0.5)
    assert _verdict(0.4, idle, idle).startswith(
        "the trainer waits on data 40% of the time: the workers are idle 50% of the time: the "
        "hand-over of batches is the bottleneck"
    )


def test_loading_in_the_training_process_and_without_worker_counts() -> None:
    alone = _worker(busy=0.9, read=0.1, decode=0.8)
    assert "it loads its own batches (num_workers=0; 80% of the time decoding, 10% reading)" in (
        _verdict(0.9, alone, in_process=True)
    )
    assert "counts nothing per thread to say where; raise num_workers (DALI's threads)" in (
        _verdict(0.3)
    )
    assert (
        loader_verdict(batches=0, wait_share=0.0, seconds=0.0, workers=(), in_process=False, cpus=1)
        == "no batch was taken in this interval"
    )


def test_batch_rows() -> None:
    images = np.zeros((5, 4, 4, 3), np.uint8)
    assert batch_rows((images, np.zeros(5))) == 5
    assert batch_rows((["a", "b"], images)) == 2
    padded = Padded(np.zeros((3, 7)), np.zeros(3, np.int64))
    assert batch_rows((padded, images)) == 3
    assert batch_rows((None,)) == 0


def test_a_trainer_that_waits_on_its_own_device_decode_is_told_so() -> None:
    """The nvImageCodec loader's trainer decodes: when that is most of a wait worth naming, the
    verdict says so; otherwise the workers' verdict stands (None)."""
    verdict = device_decode_verdict(0.3, decode_seconds=0.2, wait_seconds=0.3)
    assert verdict is not None
    assert verdict.startswith("the trainer waits on data 30% of the time, 67% of it decoding")
    assert "the device decode is the bottleneck" in verdict
    assert device_decode_verdict(0.3, decode_seconds=0.1, wait_seconds=0.3) is None
    assert device_decode_verdict(0.04, decode_seconds=0.04, wait_seconds=0.04) is None
