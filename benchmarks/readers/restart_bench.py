"""What `fastpack build --restart-markers` costs and gives: size, build time, and the CPU of a
RandomResizedCrop's decode, on one core; and which interval width to choose.

`--images` photos of the corpus (evenly spaced in its sorted listing) are read into memory and
stored as a build with `restart_width=W` stores them (`prepare_image`: the same coefficients,
optimized Huffman tables, restart markers splitting each MCU row into intervals of at most W
pixels, or whole rows), for W in `--widths` (65535: a marker every MCU row); and transcoded
once without markers (`to_baseline`), which separates what the optimized tables do from what
the markers do. Every file kind sees the same
boxes: one `RandomResizedCrop(224, max_upscale=u)` draw per image (`sample_draws(0, 0, i)`),
for u = 1 (full quality, the default) and u = 2, rendered through the window decoder into one
output array. Every crop of every kind is checked equal to the stored file's.

A round times every route once, in turns (the order reversed every other round), as the
process's CPU time and the wall time per image; the process is pinned to one CPU (`--cpu`),
OpenCV runs one thread. Build cost: the transcode per image, timed the same way over
`--build-rounds` rounds. Where the decoded region starts (the full-size rows above and columns
left of the first entropy-decoded one, at full scale) is averaged per kind.

    python -m benchmarks.readers.restart_bench --corpus /tmp/photo-corpus --images 600 \\
        --rounds 9
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import simplejpeg
from fastpack.compiler.images.baseline import MAX_RESTART_WIDTH as MAX_WIDTH
from fastpack.compiler.images.baseline import to_baseline
from fastpack.compiler.images.policy import PreparedImage, prepare_image
from fastpack.reader.image import crop_decode
from fastpack.reader.image.transforms import random_resized_box

from benchmarks.readers.crop_decode_bench import Crops, _stat, pick
from benchmarks.sysinfo import fastpack_commit, machine, versions

REPO = Path(__file__).resolve().parents[2]
STORED = "stored"
Route = Callable[[], None]


def kind_name(width: int) -> str:
    if width == 0:
        return "transcoded, no markers"
    return "markers every MCU row" if width >= MAX_WIDTH else f"intervals of <= {width} px"


def transcodes(stored: Sequence[bytes], width: int) -> list[bytes]:
    """The files as a build with `restart_width=width` stores them; without markers for 0."""
    if width == 0:
        return [to_baseline(data) for data in stored]
    out = []
    for data in stored:
        prepared = prepare_image(data, restart_width=width)
        if not isinstance(prepared, PreparedImage) or prepared.note is not None:
            raise ValueError(f"a photo was not stored with restart markers: {prepared}")
        out.append(prepared.data)
    return out


def timed(route: Route, count: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    route()
    return (
        1000 * (time.perf_counter() - wall) / count,
        1000 * (time.process_time() - cpu) / count,
    )


def region_start(blobs: Sequence[bytes], crops: Crops) -> tuple[float, float]:
    """Mean full-size rows and columns the window decoder left out above and left of the crops
    of `blobs` (decoded at full scale)."""
    extension = crop_decode._EXTENSION
    if extension is None:
        return 0.0, 0.0
    buffer = np.empty(64 << 20, np.uint8)
    cut = []
    for data, draws in zip(blobs, crops.draws, strict=True):
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        box = random_resized_box(height, width, crops.transform.scale, crops.transform.ratio, draws)
        top, left = int(box.top), int(box.left)
        rows, columns = max(int(box.height), 1), max(int(box.width), 1)
        *_, start = extension.decode_window(data, 0, top, left, rows, columns, buffer)
        cut.append(start)
    mean = np.mean(cut, axis=0)
    return float(mean[0]), float(mean[1])


Timings = dict[str, list[tuple[float, float]]]  # (wall, CPU) ms per image, per round


def transcoded_kinds(
    stored: list[bytes], widths: list[int], rounds: int
) -> tuple[dict[str, list[bytes]], Timings]:
    """The stored files and their transcodes at every width, and each transcode's timings."""
    files = {STORED: stored}
    build: Timings = {}
    for width in widths:
        name = kind_name(width)
        build[name] = []
        for _ in range(rounds):

            def transcode(n: str = name, w: int = width) -> None:
                files[n] = transcodes(stored, w)

            build[name].append(timed(transcode, len(stored)))
    return files, build


def same_crops(files: dict[str, list[bytes]], crops: dict[float, Crops]) -> dict[str, str]:
    """How many crops of each kind equal the stored files' crops."""
    checks: dict[str, str] = {}
    for u, crop in crops.items():
        reference = crop.outputs(files[STORED], True)
        for name, blobs in files.items():
            outputs = crop.outputs(blobs, True)
            same = sum(np.array_equal(a, b) for a, b in zip(outputs, reference, strict=True))
            checks[f"u={u:g} {name} == stored"] = f"{same}/{len(blobs)}"
    return checks


def time_routes(
    files: dict[str, list[bytes]], crops: dict[float, Crops], rounds: int
) -> tuple[Timings, list[tuple[float, float]]]:
    """Every kind's crops at every `max_upscale`, in turns; and the load around each round."""
    routes: dict[str, Route] = {}
    for name, blobs in files.items():
        for u, crop in crops.items():

            def run(c: Crops = crop, b: Sequence[bytes] = blobs) -> None:
                c.run(b, True)

            routes[f"{name}|u={u:g}"] = run
    for route in routes.values():  # warm-up
        route()
    samples: Timings = {name: [] for name in routes}
    loads = []
    order = list(routes)
    count = len(files[STORED])
    for r in range(rounds):
        before = os.getloadavg()[0]
        for name in order if r % 2 == 0 else order[::-1]:
            samples[name].append(timed(routes[name], count))
        loads.append((before, os.getloadavg()[0]))
        print(f"round {r}: load {loads[-1]}", flush=True)
    return samples, loads


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/photo-corpus"))
    parser.add_argument("--images", type=int, default=600)
    parser.add_argument("--widths", default="64,128,256,65535", help="interval widths, px")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--build-rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=1, help="the one CPU the process runs on")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/readers/RESTART.md"))
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/readers/restart_results.json")
    )
    parser.add_argument("--render", action="store_true", help="only re-render --json to --out")
    args = parser.parse_args(argv)
    if args.render:
        args.out.write_text(page(json.loads(args.json.read_text())))
        return
    os.sched_setaffinity(0, {args.cpu})
    cv2.setNumThreads(1)
    crop_decode.use_window_decode(True)
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    stored = [p.read_bytes() for p in pick(args.corpus, args.images)]
    count = len(stored)
    widths = [0, *(int(w) for w in args.widths.split(","))]
    files, build = transcoded_kinds(stored, widths, args.build_rounds)
    sizes = {name: sum(map(len, blobs)) for name, blobs in files.items()}
    crops = {u: Crops(u, count) for u in (1.0, 2.0)}
    checks = same_crops(files, crops)
    print(json.dumps(checks, indent=1), flush=True)
    cut = {name: region_start(blobs, crops[1.0]) for name, blobs in files.items()}
    samples, loads = time_routes(files, crops, args.rounds)
    libs = versions()
    raw = {
        "date": started,
        "commit": fastpack_commit(REPO),
        "machine": machine(),
        "cpu": args.cpu,
        "versions": {k: libs[k] for k in ("fastpack", "simplejpeg", "numpy")},
        "decoder": str(crop_decode.decoder()),
        "corpus": str(args.corpus),
        "images": count,
        "rounds": args.rounds,
        "loads": loads,
        "bytes": sizes,
        "region_start": cut,
        "build_ms": build,
        "checks": checks,
        "samples": samples,
    }
    args.json.write_text(json.dumps(raw, indent=1) + "\n")
    args.out.write_text(page(raw))
    print(page(raw))


def page(raw: dict[str, Any]) -> str:
    info, samples, sizes = raw["machine"], raw["samples"], raw["bytes"]
    kinds = list(sizes)
    loads = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in raw["loads"])
    lines = [
        "# `fastpack build --restart-markers`: what the markers cost and give",
        "",
        "Produced by `python -m benchmarks.readers.restart_bench` (its docstring says what each "
        "route does); raw numbers: `restart_results.json`.",
        "",
        f"- Date: {raw['date']}; fastpack commit {raw['commit']}",
        f"- Machine: {info['cpu']}, {info['cores']} cores (shared); the process pinned to CPU "
        f"{raw['cpu']}, Python {info['python']}",
        "- Versions: "
        + ", ".join(f"{k} {v}" for k, v in raw["versions"].items())
        + f"; window decoder: {raw['decoder']}",
        f"- Photos: {raw['images']} of `{raw['corpus']}`",
        f"- {raw['rounds']} rounds, routes in turns; 1-minute load before/after each round: "
        f"{loads}",
        "",
        "`RandomResizedCrop(224)` per image through the window decoder, CPU ms (wall ms), "
        "median (range) over the rounds; the ratio is paired within each round, against the "
        "stored files:",
        "",
        "| file kind | size vs stored | rows, columns left out | u=1 CPU | u=1 wall "
        "| u=1 / stored | u=2 CPU | u=2 / stored | build ms per image (CPU) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in kinds:
        cells = [
            f"{100 * (sizes[kind] / sizes[STORED] - 1):+.2f}%",
            "{:.0f}, {:.0f}".format(*raw["region_start"][kind]),
        ]
        for u in ("1", "2"):
            values = samples[f"{kind}|u={u}"]
            base = samples[f"{STORED}|u={u}"]
            cells.append(_stat([v[1] for v in values]))
            if u == "1":
                cells.append(_stat([v[0] for v in values]))
            cells.append(_stat([a[1] / b[1] for a, b in zip(values, base, strict=True)], digits=3))
        build = raw["build_ms"].get(kind)
        cells.append(_stat([v[1] for v in build], digits=2) if build else "-")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    if raw.get("reading"):
        lines += ["", "## Reading", "", raw["reading"]]
    lines += ["", "Pixel checks (crops equal to the stored file's):", ""]
    lines += [f"- {k}: {v}" for k, v in raw["checks"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
