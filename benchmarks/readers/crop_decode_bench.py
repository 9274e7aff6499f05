"""What a RandomResizedCrop's decode costs on one core, route by route, on baseline and
progressive JPEGs.

`--images` photos of the corpus (evenly spaced in its sorted listing) are read into memory, and
again re-encoded progressively without changing a pixel (`jpegtran -progressive -copy none`,
checked: the whole decode of every progressive file equals the baseline one). Every route sees
the same bytes and the same boxes: one `RandomResizedCrop(224)` draw per image
(`sample_draws(0, 0, i)`). The process is pinned to one CPU (`--cpu`); OpenCV runs one thread.

Routes (ms per image, over all the images):

- `whole 1`, `whole 1/2`, `whole 1/4`, `whole 1/8`: simplejpeg decodes the whole image at that
  DCT scale, nothing else.
- `fastpack u=1 simplejpeg`, `fastpack u=2 simplejpeg`: `RandomResizedCrop(224, max_upscale=u)`
  with the window decode off (`crop_decode.use_window_decode(False)`): whole image at the
  box's DCT scale, cut, resize, flip.
- `fastpack u=1 window`, `fastpack u=2 window`: the same through the window decoder.
- `dali roi + resize + flip`: DALI on the CPU (`device_id=None`, one thread, batches of
  `--batch`, synchronous execution), `fn.decoders.image_slice` of the same box (absolute
  anchor and shape, from `fn.external_source` with the bytes), `fn.resize` to 224x224
  (linear, antialiased), `fn.flip` as drawn. Per batch of `pipeline.run()`, divided by the
  images. `dali roi decode`: the `image_slice` alone (its output is the box at full scale).
  `dali whole decode`: `fn.decoders.image`, the whole image at full scale.

A round times every route once on baseline and once on progressive files, in turns (the order
reversed every other round); the page gives the median and range over `--rounds` rounds of the
wall time and of the process's CPU time per image, and the 1-minute load average before and
after every round. Every file timed is also checked: the window decoder's crops equal the
simplejpeg ones (both `u`), and the progressive file's crops equal the baseline file's.

    python -m benchmarks.readers.crop_decode_bench --corpus /tmp/photo-corpus \
        --images 448 --rounds 11 \
        --out benchmarks/readers/CROP_DECODE.md
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import simplejpeg
from fastpack.reader import RandomResizedCrop
from fastpack.reader.image import crop_decode, sample_draws
from fastpack.reader.image.decode import DecodeOptions, decode_scaled
from fastpack.reader.image.transforms import random_resized_box

from benchmarks.readers.peers._base import imagefolder_root, list_imagefolder
from benchmarks.sysinfo import fastpack_commit, machine, versions

SIZE = 224
KINDS = ("baseline", "progressive")
REPO = Path(__file__).resolve().parents[1]
Route = Callable[[], None]


def pick(corpus: Path, n: int) -> list[Path]:
    paths = [s.path for s in list_imagefolder(imagefolder_root(corpus))]
    step = max(len(paths) // n, 1)
    return paths[::step][:n]


def progressive(paths: Sequence[Path], workdir: Path) -> list[bytes]:
    """The photos re-encoded progressively by jpegtran, losslessly (checked)."""
    workdir.mkdir(parents=True, exist_ok=True)
    blobs = []
    for k, path in enumerate(paths):
        target = workdir / f"{k:05d}.jpg"
        if not target.exists():
            command = ["jpegtran", "-progressive", "-copy", "none", "-outfile", str(target)]
            subprocess.run([*command, str(path)], check=True)
        data = target.read_bytes()
        if not np.array_equal(
            simplejpeg.decode_jpeg(data), simplejpeg.decode_jpeg(path.read_bytes())
        ):
            raise ValueError(f"{target}: pixels differ from {path}")
        blobs.append(data)
    return blobs


class Crops:
    """The same RandomResizedCrop draws over a list of JPEGs, at one `max_upscale`."""

    def __init__(self, upscale: float, count: int) -> None:
        self.transform = RandomResizedCrop(SIZE, max_upscale=upscale)
        self.draws = sample_draws(0, 0, range(count), self.transform.draws).tolist()
        self.out = np.empty((SIZE, SIZE, 3), np.uint8)

    def run(self, blobs: Sequence[bytes], window: bool) -> None:
        crop_decode.use_window_decode(window)
        for data, draws in zip(blobs, self.draws, strict=True):
            self.transform(data, draws, self.out)

    def outputs(self, blobs: Sequence[bytes], window: bool) -> list[np.ndarray]:
        crop_decode.use_window_decode(window)
        return [self.transform(d, draws) for d, draws in zip(blobs, self.draws, strict=True)]


def whole(blobs: Sequence[bytes], sizes: Sequence[tuple[int, int]], shift: int) -> Route:
    options = DecodeOptions()

    def run() -> None:
        for data, (height, width) in zip(blobs, sizes, strict=True):
            decode_scaled(data, height, width, shift, options)

    return run


def dali_route(
    blobs: Sequence[bytes], sizes: Sequence[tuple[int, int]], batch: int, mode: str
) -> tuple[Route, str]:
    """DALI on the CPU: `whole` decodes whole images; `roi` decodes the same boxes (as drawn,
    at full scale) only; `roi+resize` also resizes to SIZE and flips."""

    # untyped on purpose: DALI's stubs type `device_id` as int, but None (CPU only) is its API
    dali: Any = importlib.import_module("nvidia.dali")
    fn, types = dali.fn, dali.types

    transform = RandomResizedCrop(SIZE)
    draws = sample_draws(0, 0, range(len(blobs)), transform.draws).tolist()
    anchors, shapes, flips = [], [], []
    for (height, width), d in zip(sizes, draws, strict=True):
        box = random_resized_box(height, width, transform.scale, transform.ratio, d)
        flip = d[transform.draws - 1] < transform.flip_prob
        anchors.append(np.array([box.top, box.left], np.int64))
        shapes.append(np.array([box.height, box.width], np.int64))
        flips.append(np.array(int(flip), np.int32))
    data = [np.frombuffer(b, np.uint8) for b in blobs]
    batches = [range(s, min(s + batch, len(blobs))) for s in range(0, len(blobs), batch)]
    feed = {"k": 0}

    def source(column: Sequence[Any]) -> Callable[[], list[Any]]:
        def next_batch() -> list[Any]:
            return [column[i] for i in batches[feed["k"] % len(batches)]]

        return next_batch

    pipeline = dali.Pipeline(
        batch_size=batch,
        num_threads=1,
        device_id=None,
        exec_async=False,
        exec_pipelined=False,
        prefetch_queue_depth=1,
    )
    with pipeline:
        jpegs = fn.external_source(source=source(data), batch=True, no_copy=True)
        anchor = fn.external_source(source=source(anchors), batch=True)
        shape = fn.external_source(source=source(shapes), batch=True)
        flip = fn.external_source(source=source(flips), batch=True)
        if mode == "whole":
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        else:
            images = fn.decoders.image_slice(
                jpegs, anchor, shape, device="cpu", output_type=types.RGB, axis_names="HW"
            )
        if mode == "roi+resize":
            images = fn.flip(fn.resize(images, resize_x=SIZE, resize_y=SIZE), horizontal=flip)
        pipeline.set_outputs(images)
    # the last batch may be short: DALI's external source takes any batch up to batch_size
    pipeline.build()

    def run() -> None:
        for k in range(len(batches)):
            feed["k"] = k
            pipeline.run()

    def check() -> None:
        feed["k"] = 0
        (out,) = pipeline.run()
        first = out.at(0)
        expected = {
            "whole": (*sizes[0], 3),
            "roi": (*shapes[0], 3),
            "roi+resize": (SIZE, SIZE, 3),
        }[mode]
        if first.shape != tuple(expected):
            raise ValueError(f"DALI gave {first.shape}, expected {expected}")

    check()
    return run, version("nvidia-dali-cuda120")


def timed(route: Route, count: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    route()
    return (
        1000 * (time.perf_counter() - wall) / count,
        1000 * (time.process_time() - cpu) / count,
    )


def pixel_checks(files: dict[str, list[bytes]]) -> dict[str, Any]:
    """Window decoder against simplejpeg, and progressive against baseline, crop by crop."""
    checks: dict[str, Any] = {}
    for upscale in (1.0, 2.0):
        crops = Crops(upscale, len(files["baseline"]))
        outputs = {
            (kind, window): crops.outputs(blobs, window)
            for kind, blobs in files.items()
            for window in (True, False)
        }
        for kind in KINDS:
            same = sum(
                np.array_equal(a, b)
                for a, b in zip(outputs[(kind, True)], outputs[(kind, False)], strict=True)
            )
            checks[f"u={upscale:g} {kind}: window == simplejpeg"] = f"{same}/{len(crops.draws)}"
        same = sum(
            np.array_equal(a, b)
            for a, b in zip(
                outputs[("baseline", True)], outputs[("progressive", True)], strict=True
            )
        )
        checks[f"u={upscale:g}: progressive == baseline"] = f"{same}/{len(crops.draws)}"
    return checks


def build_routes(
    files: dict[str, list[bytes]], sizes: Sequence[tuple[int, int]], batch: int
) -> tuple[dict[str, Route], str]:
    """Every route over every kind of file, named `kind|route`; and DALI's version."""
    routes: dict[str, Route] = {}
    dali_version = "?"
    for kind, blobs in files.items():
        for shift, label in enumerate(("1", "1/2", "1/4", "1/8")):
            routes[f"{kind}|whole {label}"] = whole(blobs, sizes, shift)
        for upscale in (1.0, 2.0):
            crops = Crops(upscale, len(blobs))
            for window in (False, True):
                name = f"fastpack u={upscale:g} {'window' if window else 'simplejpeg'}"

                def run(c: Crops = crops, b: Sequence[bytes] = blobs, w: bool = window) -> None:
                    c.run(b, w)

                routes[f"{kind}|{name}"] = run
        routes[f"{kind}|dali whole decode"], _ = dali_route(blobs, sizes, batch, "whole")
        routes[f"{kind}|dali roi decode"], _ = dali_route(blobs, sizes, batch, "roi")
        routes[f"{kind}|dali roi + resize + flip"], dali_version = dali_route(
            blobs, sizes, batch, "roi+resize"
        )
    return routes, dali_version


def rerender(json_path: Path, out: Path, reading: Path | None) -> None:
    raw = json.loads(json_path.read_text())
    if reading:
        raw["reading"] = reading.read_text().strip()
        json_path.write_text(json.dumps(raw, indent=1) + "\n")
    out.write_text(page(raw))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/photo-corpus"))
    parser.add_argument("--images", type=int, default=448)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--cpu", type=int, default=1, help="the one CPU the process runs on")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-crop-decode"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/readers/CROP_DECODE.md"))
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/readers/crop_decode_results.json")
    )
    parser.add_argument("--render", action="store_true", help="only re-render --json to --out")
    parser.add_argument("--reading", type=Path, help="with --render: a paragraph for the page")
    args = parser.parse_args()
    if args.render:
        rerender(args.json, args.out, args.reading)
        return
    os.sched_setaffinity(0, {args.cpu})
    cv2.setNumThreads(1)
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    paths = pick(args.corpus, args.images)
    files = {
        "baseline": [p.read_bytes() for p in paths],
        "progressive": progressive(paths, args.workdir / "progressive"),
    }
    sizes = [simplejpeg.decode_jpeg_header(b)[:2] for b in files["baseline"]]
    count = len(paths)
    checks = pixel_checks(files)
    print(json.dumps(checks, indent=1), flush=True)
    routes, dali_version = build_routes(files, sizes, args.batch)
    for route in routes.values():  # warm-up
        route()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in routes}
    loads = []
    order = list(routes)
    for r in range(args.rounds):
        before = os.getloadavg()[0]
        for name in order if r % 2 == 0 else order[::-1]:
            samples[name].append(timed(routes[name], count))
        loads.append((before, os.getloadavg()[0]))
        print(f"round {r}: load {loads[-1]}", flush=True)
    crop_decode.use_window_decode(True)
    info, libs = machine(), versions()
    raw = {
        "date": started,
        "commit": fastpack_commit(REPO),
        "machine": info,
        "cpu": args.cpu,
        "versions": {
            **{k: libs[k] for k in ("fastpack", "simplejpeg", "opencv-python-headless", "numpy")},
            "nvidia-dali-cuda120": dali_version,
        },
        "decoder": str(crop_decode.decoder()),
        "corpus": str(args.corpus),
        "images": count,
        "mean_kb": {k: sum(map(len, v)) / count / 1000 for k, v in files.items()},
        "batch": args.batch,
        "rounds": args.rounds,
        "loads": loads,
        "checks": checks,
        "samples": samples,
    }
    args.json.write_text(json.dumps(raw, indent=1) + "\n")
    args.out.write_text(page(raw))
    print(page(raw))


PAIRS = (
    ("fastpack u=1 window", "fastpack u=1 simplejpeg"),
    ("fastpack u=2 window", "fastpack u=2 simplejpeg"),
    ("fastpack u=1 window", "whole 1"),
    ("fastpack u=2 window", "whole 1"),
    ("dali roi decode", "dali whole decode"),
    ("dali roi + resize + flip", "fastpack u=1 window"),
)


def _stat(values: Sequence[float], digits: int = 3) -> str:
    median, low, high = float(np.median(values)), min(values), max(values)
    return f"{median:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def page(raw: dict[str, Any]) -> str:
    info, samples = raw["machine"], raw["samples"]
    names = list(dict.fromkeys(k.split("|", 1)[1] for k in samples))
    loads = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in raw["loads"])
    lines = [
        "# Decode cost of a RandomResizedCrop, route by route",
        "",
        "Produced by `python -m benchmarks.readers.crop_decode_bench` (its docstring says "
        "what each "
        "route does); raw numbers: `crop_decode_results.json`.",
        "",
        f"- Date: {raw['date']}; fastpack commit {raw['commit']}",
        f"- Machine: {info['cpu']}, {info['cores']} cores (shared); the process pinned to CPU "
        f"{raw['cpu']}, Python {info['python']}",
        "- Versions: "
        + ", ".join(f"{k} {v}" for k, v in raw["versions"].items())
        + f"; window decoder: {raw['decoder']}",
        f"- Photos: {raw['images']} of `{raw['corpus']}`, mean "
        f"{raw['mean_kb']['baseline']:.1f} KB baseline, {raw['mean_kb']['progressive']:.1f} KB "
        "progressive (`jpegtran -progressive -copy none`, same pixels)",
        f"- {raw['rounds']} rounds, routes in turns; 1-minute load before/after each round: "
        f"{loads}",
        f"- DALI: batches of {raw['batch']}, one thread, `device_id=None`",
        "",
        "ms per image, median (range) over the rounds; wall time, and the process's CPU time.",
        "",
        "| route | baseline wall | baseline CPU | progressive wall | progressive CPU "
        "| progressive / baseline (CPU) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        cells = []
        for kind in KINDS:
            values = samples[f"{kind}|{name}"]
            cells += [_stat([v[0] for v in values]), _stat([v[1] for v in values])]
        ratio = float(np.median([v[1] for v in samples[f"progressive|{name}"]])) / float(
            np.median([v[1] for v in samples[f"baseline|{name}"]])
        )
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    lines += [
        "",
        "Paired within each round (CPU time; median and range of the per-round ratios):",
        "",
        "| ratio | baseline | progressive |",
        "|---|---:|---:|",
    ]
    for top, bottom in PAIRS:
        cells = []
        for kind in KINDS:
            a, b = samples[f"{kind}|{top}"], samples[f"{kind}|{bottom}"]
            cells.append(_stat([x[1] / y[1] for x, y in zip(a, b, strict=True)], digits=2))
        lines.append(f"| {top} / {bottom} | " + " | ".join(cells) + " |")
    if raw.get("reading"):
        lines += ["", "## Reading", "", raw["reading"]]
    lines += ["", "Pixel checks (crops equal, of the files timed):", ""]
    lines += [f"- {k}: {v}" for k, v in raw["checks"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
