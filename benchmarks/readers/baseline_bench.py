"""What `fastpack build --baseline` costs and gives on progressive photos.

The corpus's photos are re-encoded progressively without changing a coefficient (`jpegtran
-progressive -copy all`, into `--work`). Then:

- transcode: each progressive file, held in memory, goes through `to_baseline` (the
  `_jpeg_baseline` extension) in a process pinned to one CPU (`--cpu`); per round, the wall time
  and the process's CPU time per image, and the median of the per-image wall times. Every
  transcode is checked once: a baseline frame (SOF0/SOF1), and simplejpeg's decode equal to
  the progressive file's.
- size: bytes of the transcoded files against the progressive ones (and the corpus's own
  files), in total and the median of the per-image ratios.
- crop: `RandomResizedCrop(224)` (the default route: the window decoder where built), one draw
  per image (`sample_draws(0, 0, i)`), on the progressive file and on its transcode, pinned to
  the same CPU; ms per image. The two crops must be equal.
- build: `build(progressive corpus, out, BuildOptions(workers=--workers))` with and without
  `baseline=True`, in turns (the order reversed every other round), into a fresh directory
  each time; wall seconds from `build()`'s summary.

Every round records the 1-minute load average before and after. Medians (and ranges) over
`--rounds` rounds.

    python -m benchmarks.readers.baseline_bench --corpus /tmp/photo-corpus \
        --work /tmp/baseline-bench \
        --out benchmarks/readers/baseline_results.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import simplejpeg
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.images import to_baseline
from fastpack.compiler.images.jpeg_structure import read_jpeg_structure
from fastpack.reader import RandomResizedCrop
from fastpack.reader.image import crop_decode, sample_draws

from benchmarks.sysinfo import fastpack_commit, load, machine, versions

ROOT = Path(__file__).resolve().parent.parent
BASELINE_FRAMES = (0xC0, 0xC1)


def jpegtran_version() -> str:
    done = subprocess.run(["jpegtran", "-version"], capture_output=True, text=True, check=False)
    return (done.stderr or done.stdout).strip().splitlines()[0]


def transcoder_libjpeg() -> str:
    number = int(
        importlib.import_module("fastpack.compiler.images._jpeg_baseline").LIBJPEG_TURBO_VERSION
    )
    return f"{number // 1_000_000}.{number // 1000 % 1000}.{number % 1000}"


def progressive_corpus(corpus: Path, work: Path) -> tuple[list[Path], list[Path]]:
    """(the corpus's JPEGs, their progressive copies under `work`), in sorted order."""
    sources = sorted((corpus / "train").rglob("*.jpg"))
    targets = [work / "progressive" / s.relative_to(corpus) for s in sources]

    def convert(pair: tuple[Path, Path]) -> None:
        source, target = pair
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".tmp")
            cmd = ["jpegtran", "-progressive", "-copy", "all", "-outfile", str(tmp), str(source)]
            subprocess.run(cmd, check=True)
            os.replace(tmp, target)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(convert, zip(sources, targets, strict=True)))
    return sources, targets


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


_SOF2 = 0xC2  # JPEG start-of-frame marker of a progressive (DCT) image


def check_transcodes(progressive: list[bytes], baseline: list[bytes]) -> dict[str, int]:
    frames = sum(read_jpeg_structure(b).frame.marker in BASELINE_FRAMES for b in baseline)
    was_progressive = sum(read_jpeg_structure(p).frame.marker == _SOF2 for p in progressive)
    same = sum(
        np.array_equal(simplejpeg.decode_jpeg(p), simplejpeg.decode_jpeg(b))
        for p, b in zip(progressive, baseline, strict=True)
    )
    return {
        "images": len(baseline),
        "input_sof2": was_progressive,
        "output_sof0_or_sof1": frames,
        "same_pixels": same,
    }


def time_transcodes(progressive: list[bytes]) -> dict[str, float]:
    each = []
    wall, cpu = time.perf_counter(), time.process_time()
    for data in progressive:
        start = time.perf_counter_ns()
        to_baseline(data)
        each.append((time.perf_counter_ns() - start) / 1e6)
    n = len(progressive)
    return {
        "wall_ms_per_image": (time.perf_counter() - wall) * 1e3 / n,
        "cpu_ms_per_image": (time.process_time() - cpu) * 1e3 / n,
        "median_image_ms": statistics.median(each),
        "p90_image_ms": float(np.percentile(each, 90)),
    }


def time_crops(blobs: list[bytes]) -> dict[str, float]:
    transform = RandomResizedCrop(224)
    draws = sample_draws(0, 0, range(len(blobs)), transform.draws).tolist()
    out = np.empty((224, 224, 3), np.uint8)
    wall, cpu = time.perf_counter(), time.process_time()
    for data, d in zip(blobs, draws, strict=True):
        transform(data, d, out)
    n = len(blobs)
    return {
        "wall_ms_per_image": (time.perf_counter() - wall) * 1e3 / n,
        "cpu_ms_per_image": (time.process_time() - cpu) * 1e3 / n,
    }


def same_crops(progressive: list[bytes], baseline: list[bytes]) -> int:
    transform = RandomResizedCrop(224)
    draws = sample_draws(0, 0, range(len(progressive)), transform.draws).tolist()
    return sum(
        np.array_equal(transform(p, d), transform(b, d))
        for p, b, d in zip(progressive, baseline, draws, strict=True)
    )


def time_build(
    source: Path, out: Path, workers: int, shard_size: int, baseline: bool
) -> dict[str, float]:
    """Wall seconds of one build (its summary's), and CPU seconds of this process and of the
    build's worker processes (reaped when `build` returns)."""
    shutil.rmtree(out, ignore_errors=True)
    options = BuildOptions(
        workers=workers, shard_size=shard_size, baseline=baseline, progress=False
    )
    cpu = os.times()
    summary = build(source, out, options)
    after = os.times()
    if summary.rejected:
        raise RuntimeError(f"{summary.rejected} rejects building {source}")
    shutil.rmtree(out)
    fields = ("user", "system", "children_user", "children_system")
    used = sum(getattr(after, f) - getattr(cpu, f) for f in fields)
    return {"wall_s": summary.seconds, "cpu_s": used, "shards": summary.shards}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/photo-corpus"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/baseline-bench"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=1, help="CPU the single-core parts run on")
    parser.add_argument("--workers", type=int, default=2, help="build processes")
    parser.add_argument(
        "--shard-size",
        type=int,
        default=16 * 2**20,
        help="build shard size: several shards, so that every worker has jobs",
    )
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/readers/baseline_results.json"
    )
    args = parser.parse_args()

    cv2.setNumThreads(1)
    started = datetime.now(timezone.utc)
    sources, targets = progressive_corpus(args.corpus, args.work)
    originals = [p.read_bytes() for p in sources]
    progressive = [p.read_bytes() for p in targets]
    baseline = [to_baseline(p) for p in progressive]
    size_ratios = [len(b) / len(p) for p, b in zip(progressive, baseline, strict=True)]
    sizes = {
        "images": len(progressive),
        "original_bytes": sum(map(len, originals)),
        "progressive_bytes": sum(map(len, progressive)),
        "baseline_bytes": sum(map(len, baseline)),
        "baseline_vs_progressive_total_pct": 100
        * (sum(map(len, baseline)) / sum(map(len, progressive)) - 1),
        "baseline_vs_progressive_median_pct": 100 * (statistics.median(size_ratios) - 1),
        "baseline_vs_original_total_pct": 100
        * (sum(map(len, baseline)) / sum(map(len, originals)) - 1),
        "original_frames": sorted({hex(read_jpeg_structure(o).frame.marker) for o in originals}),
    }
    checks = check_transcodes(progressive, baseline)
    checks["crops_equal"] = same_crops(progressive, baseline)

    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {args.cpu})
    transcode_rounds: list[dict[str, Any]] = []
    crop_rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        before = load()
        transcode = time_transcodes(progressive)
        kinds = [("progressive", progressive), ("baseline", baseline)]
        crops = {name: time_crops(blobs) for name, blobs in kinds[:: 1 if r % 2 == 0 else -1]}
        transcode_rounds.append({**transcode, "load_before": before, "load_after": load()})
        crop_rounds.append({**crops, "load_before": before, "load_after": load()})
    os.sched_setaffinity(0, affinity)

    build_rounds: list[dict[str, Any]] = []
    if not args.skip_build:
        source = args.work / "progressive" / "train"
        size = args.shard_size
        time_build(source, args.work / "warm", args.workers, size, True)  # page cache, imports
        for r in range(args.rounds):
            before = load()
            order = (False, True) if r % 2 == 0 else (True, False)
            runs = {
                ("baseline" if b else "plain"): time_build(
                    source, args.work / "out", args.workers, size, b
                )
                for b in order
            }
            build_rounds.append({**runs, "load_before": before, "load_after": load()})

    results = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": fastpack_commit(ROOT),
        "machine": machine(),
        "versions": {
            **versions(("fastpack", "numpy", "simplejpeg", "opencv-python-headless")),
            "libjpeg-turbo (transcoder)": transcoder_libjpeg(),
            "jpegtran": jpegtran_version(),
            "crop decoder": str(crop_decode.decoder()),
        },
        "corpus": str(args.corpus),
        "cpu": args.cpu,
        "workers": args.workers,
        "sizes": sizes,
        "checks": checks,
        "transcode_rounds": transcode_rounds,
        "transcode": {
            k: spread([r[k] for r in transcode_rounds])
            for k in ("wall_ms_per_image", "cpu_ms_per_image", "median_image_ms")
        },
        "crop_rounds": crop_rounds,
        "crop": {
            kind: {
                k: spread([r[kind][k] for r in crop_rounds])
                for k in ("wall_ms_per_image", "cpu_ms_per_image")
            }
            for kind in ("progressive", "baseline")
        },
        "build_rounds": build_rounds,
        "shard_size": args.shard_size,
        "build": {
            kind: {k: spread([r[kind][k] for r in build_rounds]) for k in ("wall_s", "cpu_s")}
            for kind in ("plain", "baseline")
        }
        if build_rounds
        else {},
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        json.dumps(
            {k: results[k] for k in ("sizes", "checks", "transcode", "crop", "build")}, indent=2
        )
    )


if __name__ == "__main__":
    main()
