"""Build speed, each kind timed `--repeats` times in one process (after the imports):

- `passthrough`: a fastpack build keeping the JPEGs as they are (`--workers` processes; with 1
  the shard jobs run in the build's own process), and `shardwriter`: the same corpus through
  `webdataset.ShardWriter`, as the peers' conversions write it (`--shardwriter-processes`
  processes, each writing a disjoint share of the shuffled samples into its own tars; 1, the
  default: the calling process);
- `fastpack`: a fastpack `max_side` build, and `reencode`: `processes` processes doing nothing
  but decode + resize + encode on the corpus bytes in memory (the same operations as the build's
  image policy: full-size simplejpeg decode, OpenCV INTER_AREA, simplejpeg quality 90 4:2:0; no
  file reading, tar writing or indexing).

`python -m benchmarks.builds.build_compare {passthrough,shardwriter,fastpack,reencode} --corpus C
--workdir W` prints `RESULT <json>`.

`compare` times pass-through builds against `ShardWriter` like with like: for each process count
of `--process-counts`, fastpack with that many workers and `ShardWriter` in that many processes,
all in turn (with `--with-max-side`, also the `fastpack` and `reencode` kinds at the largest
count), `--repeats` rounds in one process after one untimed round; `--out` gets the raw rates
and the CPU time per image of each run (this process and its children: what other work on the
machine disturbs least), with the machine, load averages, versions and commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import random
import shutil
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import sysinfo as _sysinfo
from benchmarks.parallel import cpu_seconds, timed_fork
from benchmarks.readers.peers._base import Sample, imagefolder_root, list_imagefolder

QUALITY = 90


def _fit(height: int, width: int, max_side: int) -> tuple[int, int]:
    longer = max(height, width)
    if longer <= max_side:
        return height, width
    return max(1, round(height * max_side / longer)), max(1, round(width * max_side / longer))


def _reencode_all(blobs: list[bytes], max_side: int) -> None:
    import cv2  # noqa: PLC0415 -- on use: each kind's libraries, in its own run
    import simplejpeg  # noqa: PLC0415 -- on use: each kind's libraries, in its own run

    cv2.setNumThreads(1)
    for data in blobs:
        pixels = simplejpeg.decode_jpeg(data, colorspace="RGB")
        height, width = _fit(pixels.shape[0], pixels.shape[1], max_side)
        if (height, width) != pixels.shape[:2]:
            pixels = cv2.resize(pixels, (width, height), interpolation=cv2.INTER_AREA)
        simplejpeg.encode_jpeg(pixels, quality=QUALITY, colorspace="RGB", colorsubsampling="420")


def reencode_rate(blobs: list[bytes], processes: int, max_side: int) -> float:
    """Images per second of `processes` forked decode + resize + encode loops."""
    shares = [(blobs[i::processes], max_side) for i in range(processes)]
    wall, _ = timed_fork(_reencode_all, shares)
    return len(blobs) / wall


def fastpack_rate(corpus: Path, out: Path, workers: int, max_side: int | None) -> float:
    """Images per second of a fastpack build (with `max_side`, if given) into a fresh `out`."""
    from benchmarks.readers.peers.fastpack_peer import build  # noqa: PLC0415 -- on use: each kind's libraries, in its own run

    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    build(corpus, out, workers, max_side=max_side)
    return len(list_imagefolder(imagefolder_root(corpus))) / (time.perf_counter() - began)


def shardwriter_rate(corpus: Path, out: Path, processes: int = 1) -> float:
    """Images per second of `webdataset.ShardWriter` writing the corpus into a fresh `out`: in
    this process, or in `processes` forked processes each writing every `processes`-th sample of
    the shuffled list into tars of its own (listing and shuffling timed in both cases)."""
    from benchmarks.readers.peers._wds import write_shards  # noqa: PLC0415 -- on use: each kind's libraries, in its own run

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    began = time.perf_counter()
    if processes == 1:
        write_shards(corpus, out)
    else:
        samples = list_imagefolder(imagefolder_root(corpus))
        random.Random(0).shuffle(samples)
        context = mp.get_context("fork")
        writers = [
            context.Process(target=_write_share, args=(samples, i, processes, out))
            for i in range(processes)
        ]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        codes = [w.exitcode for w in writers]
        if any(code != 0 for code in codes):
            raise RuntimeError(f"ShardWriter: a process failed, exit codes {codes}")
    return len(list_imagefolder(imagefolder_root(corpus))) / (time.perf_counter() - began)


def _write_share(samples: list[Sample], share: int, shares: int, out: Path) -> None:
    import webdataset as wds  # noqa: PLC0415 -- on use: webdataset imports torch

    from benchmarks.readers.peers._wds import SHARD_SAMPLES  # noqa: PLC0415 -- on use: each kind's libraries, in its own run

    pattern = str(out / f"{share:02d}-%06d.tar")
    with wds.ShardWriter(pattern, maxcount=SHARD_SAMPLES, verbose=0) as sink:
        for i in range(share, len(samples), shares):
            sample = samples[i]
            sink.write(
                {"__key__": f"{i:09d}", "jpg": sample.path.read_bytes(), "cls": sample.label}
            )


def _summary(rates: list[float]) -> dict[str, float]:
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates)}


def compare(
    corpus: Path, workdir: Path, counts: list[int], repeats: int, max_side: int | None = None
) -> dict[str, Any]:
    """Pass-through fastpack builds and ShardWriter at each process count, in turn, `repeats`
    timed rounds after an untimed one; with `max_side`, also in each round a fastpack build
    with `max_side` and the decode + resize + encode loop, each at the largest process count.
    Medians, ranges and ratios of medians."""
    samples = list_imagefolder(imagefolder_root(corpus))
    blobs = [sample.path.read_bytes() for sample in samples]  # also warms the page cache
    steps: list[tuple[str, Callable[[], float]]] = []
    for n in counts:
        steps.append((f"fastpack-{n}", partial(fastpack_rate, corpus, workdir / "pass", n, None)))
        steps.append((f"shardwriter-{n}", partial(shardwriter_rate, corpus, workdir / "sw", n)))
    if max_side is not None:
        n = max(counts)
        steps.append(
            (f"max-side-{n}", partial(fastpack_rate, corpus, workdir / "max", n, max_side))
        )
        steps.append((f"reencode-{n}", partial(reencode_rate, blobs, n, max_side)))
    runs: dict[str, list[float]] = {}
    cpu_ms: dict[str, list[float]] = {}
    loads = [_sysinfo.load()]
    for round_ in range(repeats + 1):
        for name, step in steps:
            before = cpu_seconds()
            rate = step()
            cpu = (cpu_seconds() - before) * 1000 / len(samples)
            if round_:
                runs.setdefault(name, []).append(rate)
                cpu_ms.setdefault(name, []).append(cpu)
        loads.append(_sysinfo.load())
    summaries = {name: _summary(rates) for name, rates in runs.items()}
    ratios = {
        f"fastpack-{n} / shardwriter-{n}": summaries[f"fastpack-{n}"]["median"]
        / summaries[f"shardwriter-{n}"]["median"]
        for n in counts
    }
    if max_side is not None:
        n = max(counts)
        ratios[f"max-side-{n} / reencode-{n}"] = (
            summaries[f"max-side-{n}"]["median"] / summaries[f"reencode-{n}"]["median"]
        )
    names = ("fastpack", "webdataset", "numpy", "simplejpeg", "opencv-python-headless")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _sysinfo.fastpack_commit(Path(__file__).resolve().parent.parent),
        "machine": _sysinfo.machine(),
        "versions": _sysinfo.versions(names),
        "corpus": _sysinfo.corpus(corpus),
        "repeats": repeats,
        "max_side": max_side,
        "load_before_and_after_each_round": loads,
        "rates": runs,
        "summaries": summaries,
        "cpu_ms_per_image": cpu_ms,
        "cpu_ms_per_image_summaries": {name: _summary(ms) for name, ms in cpu_ms.items()},
        "ratio_of_medians": ratios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    kinds = ["passthrough", "shardwriter", "fastpack", "reencode", "compare"]
    parser.add_argument("kind", choices=kinds)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-side", type=int, default=320)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shardwriter-processes", type=int, default=1)
    parser.add_argument("--process-counts", default="1,2", help="compare: comma-separated")
    parser.add_argument("--out", type=Path, help="compare: the raw JSON")
    parser.add_argument(
        "--with-max-side", action="store_true", help="compare: also the --max-side build"
    )
    args = parser.parse_args()
    if args.kind == "compare":
        counts = [int(n) for n in args.process_counts.split(",")]
        max_side = args.max_side if args.with_max_side else None
        result = compare(args.corpus, args.workdir, counts, args.repeats, max_side)
        text = json.dumps(result, indent=1)
        if args.out:
            args.out.write_text(text + "\n")
        print("RESULT " + json.dumps(result["ratio_of_medians"]), flush=True)
        return
    if args.kind == "passthrough":
        out = args.workdir / "fastpack-pass-through"
        rates = [fastpack_rate(args.corpus, out, args.workers, None) for _ in range(args.repeats)]
    elif args.kind == "shardwriter":
        out = args.workdir / "shardwriter"
        rates = [
            shardwriter_rate(args.corpus, out, args.shardwriter_processes)
            for _ in range(args.repeats)
        ]
    elif args.kind == "fastpack":
        out = args.workdir / "fastpack-max-side"
        rates = [
            fastpack_rate(args.corpus, out, args.workers, args.max_side)
            for _ in range(args.repeats)
        ]
    else:
        blobs = [s.path.read_bytes() for s in list_imagefolder(imagefolder_root(args.corpus))]
        rates = [reencode_rate(blobs, args.workers, args.max_side) for _ in range(args.repeats)]
    print("RESULT " + json.dumps({"rates": rates, "max_side": args.max_side}), flush=True)


if __name__ == "__main__":
    main()
