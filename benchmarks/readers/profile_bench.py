"""Where the CPU time of the `fastpack` peer's batches goes, stage by stage.

    python -m benchmarks.readers.profile_bench --corpus /tmp/photo-corpus \
        --out benchmarks/readers/PROFILE.md --json benchmarks/readers/profile_results.json

The peer's settings (`peers/fastpack_peer.py`): `RandomResizedCrop(224, max_upscale=...)`, batches
of 64 in `make_loader`'s order, the dataset built by the peer's pass-through build. One process
pinned to one core, OpenCV single-threaded (as in the loader's workers), times every stage of
`Dataset.__getitems__` as a worker runs it, sample by sample, with this thread's CPU clock: a
replica of the path (checked to give the loader's pixels) with a clock read between stages, the
clock's own cost subtracted. Then, in the same round:

- the window decode split: the same call with a one-pixel window at the top of the image (the
  decoder's set-up and first rows), at the window's top row (plus the entropy decoding of the
  rows above it, skipped), at the image's last row (the whole image entropy-decoded), and
  simplejpeg's decode of the whole image at the same scale (`FASTPACK_JPEG_DECODER=simplejpeg`);
- `__getitems__` itself, uninstrumented, on the same core;
- one epoch of the peer's loader (2 workers, unpinned), its CPU time in every process.

Each figure is CPU milliseconds per image; rounds are interleaved, so a slow spell of a shared
machine falls on every stage. The raw JSON keeps every round.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pickle
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import torch
import torch.multiprocessing
from fastpack.reader import Dataset, RandomResizedCrop
from fastpack.reader.image import crop_decode
from fastpack.reader.image.decode import (
    _halve_to_within_2x,
    decode_scaled,
    jpeg_size,
    scaled_window,
    scratch,
)
from fastpack.reader.image.draws import sample_draws
from fastpack.reader.image.transforms import WindowPlan
from fastpack.reader.order.sampler import EpochBatch, EpochBatchSampler
from fastpack.reader.torch_loader.batch_slots import BatchSlots

from benchmarks import sysinfo as _sysinfo
from benchmarks.procmem import cpu_ticks, descendants
from benchmarks.readers.peers import fastpack_peer

SIZE = 224
Clock = Callable[[], int]

# the stages of one batch, in the order a worker runs them; per batch, then per image
BATCH_STAGES = (
    ("allocate", "claim a batch slot, map its pages (`BatchSlots.allocate`)"),
    ("index", "index rows, labels, payload views and shard numbers of the batch"),
    ("draws", "the batch's random draws (`sample_draws`, as lists)"),
)
IMAGE_STAGES = (
    ("header", "JPEG frame header and pixel budget (`jpeg_size`)"),
    ("box", "crop box, DCT scale, window and flip (`RandomResizedCrop.plan`)"),
    ("glue", "output check, scratch buffer, region view"),
    ("decode", "window decode, the C call (`_jpeg_crop.decode_window`)"),
    ("resize", "halvings and `cv2.resize` INTER_LINEAR into the batch slot"),
    ("flip", "`cv2.flip` in place (half the images)"),
    ("release", "the pages around the payload unmapped after each image (`release_range`)"),
)
SEND_STAGES = (
    ("index release", "index pages unmapped every 64 samples (`Opened.release`)"),
    ("collate", "batch as tensors (`BatchSlots.collate`)"),
    ("pickle", "the batch pickled in the worker (`ForkingPickler`)"),
    ("unpickle", "the batch unpickled in the trainer, slot lent as a tensor"),
    ("return", "the trainer drops the batch: the slot is freed"),
)
SPLIT = (
    ("setup", "decoder set-up and first rows: 1x1 window at the top"),
    ("to top", "1-pixel window at the crop's top row: set-up + rows above skipped"),
    ("to bottom", "1-pixel window at the last row: set-up + whole image entropy-decoded"),
    ("simplejpeg", "simplejpeg, whole image at the same scale (FASTPACK_JPEG_DECODER=simplejpeg)"),
)


def pin(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})


def clock_cost(clock: Clock, reads: int = 200_000) -> float:
    """Nanoseconds one `clock()` read adds to the interval it ends (the minimum of 5 tries)."""
    best = float("inf")
    for _ in range(5):
        start = clock()
        for _ in range(reads):
            clock()
        best = min(best, (clock() - start) / (reads + 1))
    return best


class Stages:
    """CPU nanoseconds per stage: `mark(name)` charges the time since the previous mark."""

    def __init__(self, clock: Clock, cost: float) -> None:
        self.clock, self.cost = clock, cost
        self.ns: dict[str, float] = defaultdict(float)
        self.last = clock()

    def start(self) -> None:
        self.last = self.clock()

    def mark(self, name: str) -> None:
        now = self.clock()
        self.ns[name] += now - self.last - self.cost
        self.last = now


def replica_batch(  # noqa: PLR0913 -- keyword inputs
    dataset: Dataset,
    transform: RandomResizedCrop,
    slots: BatchSlots,
    batch: EpochBatch,
    stages: Stages,
    *,
    keep: bool = False,
) -> tuple[Any, ...] | None:
    """`Dataset.__getitems__` of `batch` for `transform`, stage by stage, then the batch's trip
    to the trainer in this process (`keep`: return what the trainer got)."""
    extension = crop_decode._EXTENSION
    if extension is None:
        raise SystemExit("the window decoder (_jpeg_crop) is not built: nothing to profile")
    options, budget, shape = transform.options, transform.options.pixel_budget, (SIZE, SIZE)
    stages.start()
    images = slots.allocate((len(batch), SIZE, SIZE, 3))
    stages.mark("allocate")
    state = dataset._opened()
    rows = [state.row(int(i)) for i in batch]
    labels = state.labels[rows]
    payloads = list(state.payloads(rows, dataset._image()))
    stages.mark("index")
    row_draws = sample_draws(dataset.seed, batch.epoch, rows, transform.draws).tolist()
    stages.mark("draws")
    places = state.places(rows, dataset._image())
    for k, data in enumerate(payloads):  # `ImageDecoding.batch`: each crop planned, decoded
        size = jpeg_size(data, budget)
        stages.mark("header")
        box, flip, shift = transform._plan(size[0], size[1], row_draws[k])
        plan = WindowPlan(size, shift, scaled_window(box, shift), flip)
        stages.mark("box")
        out = images[k]
        if out.shape != (*shape, 3) or not out.flags.c_contiguous:
            raise ValueError("a batch slot of another shape")
        (top, left, bottom, right), shift = plan.window, plan.shift
        buffer = scratch((bottom - top + 2) * -(-plan.size[1] >> shift) * 3)
        stages.mark("glue")
        y0, x0, n_rows, n_columns = extension.decode_window(
            data,
            shift,
            top,
            left,
            bottom - top,
            right - left,
            buffer,
            fastdct=options.fastdct,
            fastupsample=options.fastupsample,
        )[:4]
        stages.mark("decode")
        block = buffer[: n_rows * n_columns * 3].reshape(n_rows, n_columns, 3)
        region = block[top - y0 : bottom - y0, left - x0 : right - x0]
        stages.mark("glue")
        region = _halve_to_within_2x(region, SIZE, SIZE)
        cv2.resize(region, shape, dst=out, interpolation=cv2.INTER_LINEAR)
        stages.mark("resize")
        if plan.flip:
            cv2.flip(out, 1, dst=out)
        stages.mark("flip")
        state.shards.release_range(*places[k])
        stages.mark("release")
    state.release(len(rows))  # the batch's shard pages, and every 64 samples the index's
    stages.mark("index release")
    return send_batch(slots, images, labels, stages, keep=keep)


def send_batch(
    slots: BatchSlots, images: Any, labels: Any, stages: Stages, *, keep: bool
) -> tuple[Any, ...] | None:
    """The batch's trip from a worker to the trainer, in this process: collated, pickled as a
    DataLoader's queue pickles it, unpickled (the slot lent as a tensor) and dropped."""
    sent = slots.collate(images, labels)
    stages.mark("collate")
    wire = bytes(ForkingPickler.dumps(sent))
    del sent, images
    stages.mark("pickle")
    got = pickle.loads(wire)
    stages.mark("unpickle")
    if keep:
        return tuple(got)
    del got
    stages.mark("return")
    return None


def split_round(
    dataset: Dataset, transform: RandomResizedCrop, batches: list[EpochBatch], clock: Clock
) -> dict[str, float]:
    """Total CPU ns of each `SPLIT` variant of the window decode over the epoch's images."""
    extension = crop_decode._EXTENSION
    if extension is None:
        raise SystemExit("the window decoder (_jpeg_crop) is not built: nothing to split")
    state = dataset._opened()
    jobs = []
    for batch in batches:
        rows = [state.row(int(i)) for i in batch]
        row_draws = sample_draws(dataset.seed, batch.epoch, rows, transform.draws).tolist()
        for k, data in enumerate(state.payloads(rows, dataset._image())):
            height, width = jpeg_size(data)
            box, _, shift = transform._plan(height, width, row_draws[k])
            top, left, _, _ = scaled_window(box, shift)
            jobs.append((bytes(data), height, width, shift, top, left))
    buffer = scratch(4 * 1024 * 1024)
    totals: dict[str, float] = {}
    calls: dict[str, Callable[[bytes, int, int, int, int, int], object]] = {
        "setup": lambda d, h, w, s, t, left: extension.decode_window(d, s, 0, left, 1, 1, buffer),
        "to top": lambda d, h, w, s, t, left: extension.decode_window(d, s, t, left, 1, 1, buffer),
        "to bottom": lambda d, h, w, s, t, left: extension.decode_window(
            d, s, -(-h >> s) - 1, left, 1, 1, buffer
        ),
        "simplejpeg": lambda d, h, w, s, t, left: decode_scaled(d, h, w, s, transform.options),
    }
    for name, call in calls.items():
        start = clock()
        for job in jobs:
            call(*job)
        totals[name] = clock() - start
    return totals


def getitems_round(dataset: Dataset, batches: list[EpochBatch], clock: Clock) -> float:
    start = clock()
    for batch in batches:
        dataset.__getitems__(batch)
    return clock() - start


def loader_round(epochs: fastpack_peer.FastpackEpochs, epoch: int, settle: float) -> dict[str, Any]:
    """One epoch of the peer's loader: CPU seconds of the trainer and of its workers, counted
    after `settle` seconds so that the workers' prefetch of the next epoch falls in this one
    (as the previous epoch's prefetch of this one fell in that)."""
    workers = descendants(os.getpid())[1:]
    tick = os.sysconf("SC_CLK_TCK")
    trainer0, workers0, wall0 = time.process_time(), cpu_ticks(workers), time.perf_counter()
    images = sum(len(labels) for _, labels in epochs.epoch(epoch))
    wall = time.perf_counter() - wall0
    time.sleep(settle)
    return {
        "images": images,
        "wall_s": wall,
        "trainer_s": time.process_time() - trainer0,
        "workers_s": (cpu_ticks(workers) - workers0) / tick,
    }


def check_replica(
    dataset: Dataset, transform: RandomResizedCrop, slots: BatchSlots, batch: EpochBatch
) -> None:
    """The replica gives `__getitems__`'s pixels and labels for `batch`."""
    stages = Stages(time.thread_time_ns, 0)
    got = replica_batch(dataset, transform, slots, batch, stages, keep=True)
    if got is None:
        raise SystemExit("the profiled replica kept no batch")
    images, labels = dataset.__getitems__(batch)
    if not (np.array_equal(got[0].numpy(), images) and np.array_equal(got[1].numpy(), labels)):
        raise SystemExit("the profiled replica does not give __getitems__'s pixels")


def run(args: argparse.Namespace) -> dict[str, Any]:
    cv2.setNumThreads(1)
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[-1] if args.cpu is None else args.cpu
    workdir = args.workdir / "fastpack"
    if not (workdir / "dataset").is_dir():
        fastpack_peer.convert(args.corpus, workdir, 2)
    transform = RandomResizedCrop(SIZE, max_upscale=args.max_upscale)
    dataset = Dataset(workdir / "dataset", transform=transform, seed=args.seed)
    sampler = EpochBatchSampler(dataset, args.batch_size, shuffle=True, seed=args.seed)
    slots = BatchSlots(1, 3, shape=(args.batch_size, SIZE, SIZE, 3), reuse=True)
    slots.start(0)
    epochs = fastpack_peer.loader(
        workdir, args.batch_size, args.workers, args.seed, max_upscale=args.max_upscale
    )
    # workers start here, on every core; no batch is kept (a batch held keeps its slot taken)
    sum(len(labels) for _, labels in epochs.epoch(0))
    time.sleep(args.settle)
    pin(cpu)
    clock = time.thread_time_ns
    cost = clock_cost(clock)
    dataset.set_epoch(0)
    check_replica(dataset, transform, slots, next(iter(sampler)))
    report: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": _sysinfo.machine(),
        "versions": _sysinfo.versions(),
        "fastpack_commit": _sysinfo.fastpack_commit(Path(__file__).resolve().parents[2]),
        "corpus": _sysinfo.corpus(args.corpus),
        "decoder": str(crop_decode.decoder()),
        "pinned_cpu": cpu,
        "clock_read_ns": cost,
        "load_before": _sysinfo.load(),
        "rounds": [],
    }
    for r in range(args.rounds):
        epoch = r + 1
        dataset.set_epoch(epoch)
        batches = list(sampler)
        images = sum(len(b) for b in batches)
        stages = Stages(clock, cost)
        for batch in batches:
            replica_batch(dataset, transform, slots, batch, stages)
        split = split_round(dataset, transform, batches, clock)
        getitems = getitems_round(dataset, batches, clock)
        loaded = loader_round(epochs, epoch, args.settle)
        per_image = {k: v / images / 1e6 for k, v in stages.ns.items()}
        per_image |= {f"split {k}": v / images / 1e6 for k, v in split.items()}
        per_image["getitems"] = getitems / images / 1e6
        n = loaded["images"]
        per_image["loader"] = 1000 * (loaded["trainer_s"] + loaded["workers_s"]) / n
        per_image["loader trainer"] = 1000 * loaded["trainer_s"] / n
        per_image["loader workers"] = 1000 * loaded["workers_s"] / n
        report["rounds"].append(
            {"epoch": epoch, "images": images, "load": _sysinfo.load(), "loader": loaded}
            | {"ms_per_image": per_image}
        )
        print(f"round {r}: " + ", ".join(f"{k} {v:.4f}" for k, v in per_image.items()), flush=True)
    report["load_after"] = _sysinfo.load()
    return report


def summary(rounds: Sequence[dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    """Per figure: median, lowest and highest over the rounds."""
    names = rounds[0]["ms_per_image"].keys()
    out = {}
    for name in names:
        values = [r["ms_per_image"][name] for r in rounds]
        out[name] = (statistics.median(values), min(values), max(values))
    return out


def _row(name: str, what: str, figure: tuple[float, float, float]) -> str:
    median, low, high = figure
    return f"| {name} | {what} | {median:.4f} | {low:.4f}-{high:.4f} |"


def markdown(report: dict[str, Any]) -> str:
    s = summary(report["rounds"])
    stage_names = [n for n, _ in (*BATCH_STAGES, *IMAGE_STAGES, *SEND_STAGES)]
    # each round's sum of the stages, then the median of those sums
    sums = [sum(r["ms_per_image"][n] for n in stage_names) for r in report["rounds"]]
    lines = [
        "# Where a batch's CPU time goes",
        "",
        "`python -m benchmarks.readers.profile_bench --corpus CORPUS --out "
        "benchmarks/readers/PROFILE.md --json benchmarks/readers/profile_results.json` "
        "(docstring of `profile_bench.py`): the `fastpack` peer's settings "
        f"(`RandomResizedCrop(224, max_upscale={report['args']['max_upscale']})`, batches of "
        f"{report['args']['batch_size']}, {report['args']['workers']} workers for the loader), "
        f"{len(report['rounds'])} interleaved rounds of one epoch each. CPU milliseconds per "
        "image: median and range over the rounds. The stages run in one process pinned to one "
        "core (OpenCV single-threaded, as in a worker); the loader's figure counts every "
        "process (trainer and workers, unpinned).",
        "",
        f"- Date: {report['date']}; fastpack commit `{report['fastpack_commit']}`",
        f"- Machine: `{json.dumps(report['machine'])}`; load before / after "
        f"`{report['load_before']}` / `{report['load_after']}`",
        f"- Versions: `{json.dumps(report['versions'])}`",
        f"- Decoder: {report['decoder']}",
        f"- Corpus: `{json.dumps(report['corpus'])}`",
        f"- Raw numbers, every round: `{report['args']['json_name']}`",
        "",
        "| stage | what | median | range |",
        "|---|---|---:|---:|",
    ]
    for name, what in (*BATCH_STAGES, *IMAGE_STAGES, *SEND_STAGES):
        lines.append(_row(name, what, s[name]))
    lines.append(
        _row(
            "**sum of the stages**",
            "each round's sum",
            (statistics.median(sums), min(sums), max(sums)),
        )
    )
    lines.append(_row("`__getitems__`", "uninstrumented, same core", s["getitems"]))
    lines.append(_row("**loader**", "one epoch, every process", s["loader"]))
    lines.append(_row("loader: trainer", "the iterating process", s["loader trainer"]))
    lines.append(_row("loader: workers", "the 2 worker processes", s["loader workers"]))
    lines += ["", "The window decode split (same images, same windows, one loop per variant):", ""]
    lines += ["| variant | what | median | range |", "|---|---|---:|---:|"]
    lines.append(_row("window", "the decode as the loader runs it (above)", s["decode"]))
    for name, what in SPLIT:
        lines.append(_row(name, what, s[f"split {name}"]))
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="ImageFolder root")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-bench"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--max-upscale", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2, help="the loader's")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", type=int, help="the core to pin to (default: the last allowed)")
    parser.add_argument("--settle", type=float, default=0.5, help="seconds after each epoch")
    parser.add_argument("--out", type=Path, help="Markdown table")
    parser.add_argument("--json", type=Path, help="raw numbers")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    report = run(args)
    report["args"]["json_name"] = args.json.name if args.json else "(not written)"
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(markdown(report))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
