"""Image quality and cost of fastpack's RandomResizedCrop against a full-decode reference, on
the whole corpus and on its sharpest photos.

**Sharpness.** For every image: the share of the spectral energy of its luma (full decode,
mean removed, Hann window) at radial frequencies above half Nyquist (0.25 cycles per pixel),
and, for comparison, the variance of its Laplacian. The *sharp set* is the quarter of the
images with the largest energy share above half Nyquist. With `--native N`, N more images are
cut from the wallpaper sources at their own resolution (no downscaling; a 500-pixel window of
aspect 3/4-4/3, JPEG quality 90, 4:2:0, seeded) into `--workdir` and measured as a third set.

**Quality.** One 224x224 RandomResizedCrop box per image (scale 0.08-1, ratio 3/4-4/3,
flip 0.5), rendered by fastpack at `max_upscale` 1, 1.5 and 2 and by a reference: a full-size
decode of the same box + `cv2.INTER_AREA` resize. PSNR of fastpack's output against the
reference (mean, 5th percentile, minimum; 99 dB where identical) for three ways of drawing the
box:

- `fastpack`: `RandomResizedCrop(224, max_upscale=u)` with its own draws (`sample_draws(0, 0,
  i)`); the box is moved to the grid of its DCT scale (`snap_to_scale`), and the reference
  renders that moved box: what the transform shows, and what `crop()` reports.
- `torchvision, snapped`: torchvision's `RandomResizedCrop.get_params` algorithm over numpy's
  generator (seed 0), the box moved to the grid as above, reference of the moved box.
- `torchvision, as drawn`: the same boxes passed to `crop_decode.render` unmoved (as
  `CenterCrop` does); the reference renders the box as drawn, so an edge that falls between
  two decoded pixels shows up as a shift of up to half a decoded pixel.

**Time.** ms per image of the `fastpack` renders in one process, the window decoder and
simplejpeg in alternating passes (`--repeats` each, median), and a full decode alone.

    python -m benchmarks.readers.quality_bench --corpus /tmp/photo-corpus --native 600 \
        --out benchmarks/readers/QUALITY.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import simplejpeg
from fastpack.reader import RandomResizedCrop
from fastpack.reader.image import Box, crop_decode, sample_draws
from fastpack.reader.image.decode import dct_shift, snap_to_scale

from benchmarks.readers.peers._base import imagefolder_root, list_imagefolder
from benchmarks.sysinfo import fastpack_commit, load, machine, versions

SIZE = 224
UPSCALES = (1.0, 1.5, 2.0)
SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)
DRAWINGS = ("fastpack", "torchvision, snapped", "torchvision, as drawn")
SHARP_FRACTION = 0.25
NATIVE_SIDE, NATIVE_MIN_SOURCE = 500, 1000
REPO = Path(__file__).resolve().parents[1]

Image = npt.NDArray[np.uint8]


_IDENTICAL_PSNR = 99.0  # dB: the PSNR given to identical images


def psnr(a: Image, b: Image) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return _IDENTICAL_PSNR if mse == 0 else 10 * math.log10(255**2 / mse)


_HIGH_FREQUENCY = 0.25  # cycles per pixel above which power counts as detail


def sharpness(image: Image) -> tuple[float, float]:
    """(share of luma energy above half Nyquist, variance of the Laplacian) of an RGB image."""
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float64)
    gray -= gray.mean()
    height, width = gray.shape
    windowed = gray * np.outer(np.hanning(height), np.hanning(width))
    power = np.abs(np.fft.rfft2(windowed)) ** 2
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.rfftfreq(width)[None, :]
    total = float(power.sum())
    high = float(power[np.hypot(fy, fx) > _HIGH_FREQUENCY].sum())
    laplacian = float(cv2.Laplacian(gray, cv2.CV_64F).var())
    return (high / total if total > 0 else 0.0), laplacian


_FLIP_CHANCE = 0.5


def torchvision_box(rng: np.random.Generator, height: int, width: int) -> tuple[Box, bool]:
    """torchvision's `RandomResizedCrop.get_params` (10 tries, then a centre crop) and
    `RandomHorizontalFlip`, with numpy's generator in place of torch's."""
    area = height * width
    log_lo, log_hi = math.log(RATIO[0]), math.log(RATIO[1])
    flip = bool(rng.random() < _FLIP_CHANCE)
    for _ in range(10):
        target = area * rng.uniform(*SCALE)
        aspect = math.exp(rng.uniform(log_lo, log_hi))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(rng.integers(0, height - h + 1))
            left = int(rng.integers(0, width - w + 1))
            return Box(top, left, h, w), flip
    in_ratio = width / height
    if in_ratio < RATIO[0]:
        w, h = width, round(width / RATIO[0])
    elif in_ratio > RATIO[1]:
        w, h = round(height * RATIO[1]), height
    else:
        w, h = width, height
    return Box((height - h) // 2, (width - w) // 2, h, w), flip


def reference(image: Image, box: Box, flip: bool) -> Image:
    """The same box of the full decode, INTER_AREA to SIZE x SIZE, mirrored like fastpack's."""
    top, left, height, width = (int(v) for v in (box.top, box.left, box.height, box.width))
    cut = image[top : top + height, left : left + width]
    out: Image = cv2.resize(cut, (SIZE, SIZE), interpolation=cv2.INTER_AREA).astype(np.uint8)
    return out[:, ::-1] if flip else out


def native_corpus(sources: Path, out: Path, n: int, seed: int = 0) -> list[Path]:
    """`n` JPEGs cut from the photos under `sources` at their own resolution: a window whose
    longer side is 500 pixels, aspect 3/4-4/3, at a random place of a random photo (at least
    1000 pixels on its longer side), quality 90, 4:2:0. Made once, kept in `out`."""
    paths = sorted(
        {
            os.path.realpath(p)
            for p in sources.rglob("*")
            if p.suffix.lower() in (".jpg", ".jpeg") and p.is_file()
        }
    )
    photos = []
    for path in paths:
        height, width, _, _ = simplejpeg.decode_jpeg_header(Path(path).read_bytes())
        if max(height, width) >= NATIVE_MIN_SOURCE:
            photos.append((path, height, width))
    if not photos:
        raise FileNotFoundError(f"{sources}: no JPEG photos of {NATIVE_MIN_SOURCE}+ pixels")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    files: list[Path] = []
    cache: dict[str, Image] = {}
    for k in range(n):
        path, height, width = photos[int(rng.integers(len(photos)))]
        aspect = math.exp(rng.uniform(math.log(RATIO[0]), math.log(RATIO[1])))
        w, h = (
            (NATIVE_SIDE, round(NATIVE_SIDE / aspect))
            if aspect >= 1
            else (
                round(NATIVE_SIDE * aspect),
                NATIVE_SIDE,
            )
        )
        h, w = min(h, height), min(w, width)
        top, left = int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1))
        target = out / f"{k:05d}.jpg"
        files.append(target)
        if target.exists():
            continue
        if path not in cache:
            cache.clear()
            cache[path] = simplejpeg.decode_jpeg(Path(path).read_bytes(), colorspace="RGB")
        window = np.ascontiguousarray(cache[path][top : top + h, left : left + w])
        target.write_bytes(simplejpeg.encode_jpeg(window, 90, "RGB", "420"))
    return files


def render_all(blobs: Sequence[bytes], images: Sequence[Image], upscale: float) -> dict[str, Any]:
    """PSNR per image for each way of drawing the box, and which images decode reduced."""
    transform = RandomResizedCrop(SIZE, max_upscale=upscale)
    draws = sample_draws(0, 0, range(len(blobs)), transform.draws).tolist()
    rng = np.random.default_rng(0)
    out = np.empty((SIZE, SIZE, 3), np.uint8)
    scores: dict[str, list[float]] = {name: [] for name in DRAWINGS}
    reduced = []
    for i, (data, image) in enumerate(zip(blobs, images, strict=True)):
        height, width = image.shape[:2]
        box, flip, shift = transform._plan(height, width, draws[i])
        transform(data, draws[i], out)
        scores["fastpack"].append(psnr(out, reference(image, box, flip)))
        reduced.append(shift > 0)
        drawn, flip = torchvision_box(rng, height, width)
        shift = dct_shift(drawn.height, drawn.width, SIZE, SIZE, upscale)
        snapped = snap_to_scale(drawn, shift, height, width)
        crop_decode.render(data, (height, width), snapped, out, flip=flip, shift=shift)
        scores["torchvision, snapped"].append(psnr(out, reference(image, snapped, flip)))
        crop_decode.render(data, (height, width), drawn, out, flip=flip, max_upscale=upscale)
        scores["torchvision, as drawn"].append(psnr(out, reference(image, drawn, flip)))
    return {"psnr": scores, "reduced": reduced}


def summary(scores: Sequence[float]) -> dict[str, float]:
    values = np.asarray(scores)
    return {
        "mean": float(values.mean()),
        "p5": float(np.percentile(values, 5)),
        "min": float(values.min()),
        "identical": float(np.mean(values >= _IDENTICAL_PSNR)),
    }


def timed_ms(blobs: Sequence[bytes], work: Callable[[int, bytes], object]) -> tuple[float, float]:
    """Wall and CPU ms per image of one pass."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i, data in enumerate(blobs):
        work(i, data)
    return (
        1000 * (time.perf_counter() - wall) / len(blobs),
        1000 * (time.process_time() - cpu) / len(blobs),
    )


Work = Callable[[int, bytes], object]


def crop_work(transform: RandomResizedCrop, draws: list[list[float]], out: Image) -> Work:
    def work(i: int, data: bytes) -> object:
        return transform(data, draws[i], out)

    return work


def times(blobs: Sequence[bytes], repeats: int) -> dict[str, Any]:
    """Wall and CPU ms/image of each `max_upscale` with the window decoder and with
    simplejpeg, and of a full decode alone, in alternating passes; median and range of
    `repeats` passes each."""
    out = np.empty((SIZE, SIZE, 3), np.uint8)
    routes: dict[str, Work] = {"full decode": lambda _, data: simplejpeg.decode_jpeg(data)}
    for upscale in UPSCALES:
        transform = RandomResizedCrop(SIZE, max_upscale=upscale)
        draws = sample_draws(0, 0, range(len(blobs)), transform.draws).tolist()
        for window in (True, False):
            routes[f"{upscale:g} {'window' if window else 'simplejpeg'}"] = crop_work(
                transform, draws, out
            )
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in routes}
    previous = crop_decode.window_decode_enabled()
    try:
        for _ in range(repeats):
            for name, work in routes.items():
                crop_decode.use_window_decode(not name.endswith("simplejpeg"))
                samples[name].append(timed_ms(blobs, work))
    finally:
        crop_decode.use_window_decode(previous)
    stats = {}
    for name, passes in samples.items():
        wall, cpu = [p[0] for p in passes], [p[1] for p in passes]
        stats[name] = {
            "median": float(np.median(wall)),
            "min": min(wall),
            "max": max(wall),
            "passes": wall,
            "cpu_median": float(np.median(cpu)),
            "cpu_min": min(cpu),
            "cpu_max": max(cpu),
            "cpu_passes": cpu,
        }
    return stats


def measure_set(
    name: str,
    index: Sequence[int],
    blobs: Sequence[bytes],
    renders: dict[float, dict[str, Any]],
    repeats: int,
) -> dict[str, Any]:
    chosen = [blobs[i] for i in index]
    rows = []
    for upscale in UPSCALES:
        psnrs = renders[upscale]["psnr"]
        rows.append(
            {
                "max_upscale": upscale,
                "reduced": float(np.mean([renders[upscale]["reduced"][i] for i in index])),
                **{d: summary([psnrs[d][i] for i in index]) for d in DRAWINGS},
            }
        )
    print(f"{name}: timing {len(chosen)} images", flush=True)
    load_before = os.getloadavg()[0]
    ms = times(chosen, repeats)
    per_image = {
        f"{u:g}": {d: [round(renders[u]["psnr"][d][i], 2) for i in index] for d in DRAWINGS}
        for u in UPSCALES
    }
    return {
        "set": name,
        "images": len(index),
        "index": list(index),
        "rows": rows,
        "ms": ms,
        "load_1min": [load_before, os.getloadavg()[0]],
        "psnr_per_image": per_image,
    }


def distribution(values: Sequence[float]) -> dict[str, float]:
    qs = (0, 5, 25, 50, 75, 95, 100)
    return {f"p{q}": float(np.percentile(values, q)) for q in qs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--native", type=int, default=0, help="images cut at native resolution")
    parser.add_argument("--sources", type=Path, default=Path("/tmp/photo-sources/x"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-quality"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/readers/QUALITY.md"))
    parser.add_argument(
        "--json", type=Path, default=Path("benchmarks/readers/quality_results.json")
    )
    parser.add_argument("--render", action="store_true", help="only re-render --json to --out")
    args = parser.parse_args()
    if args.render:
        args.out.write_text(page(json.loads(args.json.read_text())))
        return
    cv2.setNumThreads(1)
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    before = load()
    sets: dict[str, list[Path]] = {
        "corpus": [s.path for s in list_imagefolder(imagefolder_root(args.corpus))]
    }
    if args.native:
        sets["native"] = native_corpus(args.sources, args.workdir / "native", args.native)
    results: list[dict[str, Any]] = []
    sharp_stats: dict[str, Any] = {}
    for set_name, paths in sets.items():
        blobs = [p.read_bytes() for p in paths]
        images = [simplejpeg.decode_jpeg(b, colorspace="RGB") for b in blobs]
        measures = [sharpness(image) for image in images]
        high = [m[0] for m in measures]
        sharp_stats[set_name] = {
            "hf_share": distribution(high),
            "laplacian_var": distribution([m[1] for m in measures]),
            "hf_share_values": high,
            "laplacian_var_values": [m[1] for m in measures],
        }
        print(f"{set_name}: {len(blobs)} images, rendering", flush=True)
        renders = {u: render_all(blobs, images, u) for u in UPSCALES}
        everything = list(range(len(blobs)))
        results.append(measure_set(set_name, everything, blobs, renders, args.repeats))
        if set_name == "corpus":
            order = sorted(everything, key=lambda i: high[i], reverse=True)
            sharp = sorted(order[: round(SHARP_FRACTION * len(order))])
            threshold = min(high[i] for i in sharp)
            sharp_stats["sharp"] = {"hf_share_min": threshold, "images": len(sharp)}
            results.append(measure_set("sharp", sharp, blobs, renders, args.repeats))
    info, libs = machine(), versions()
    raw = {
        "date": started,
        "commit": fastpack_commit(REPO),
        "machine": info,
        "load_before": before,
        "load_after": load(),
        "versions": {
            k: libs[k] for k in ("fastpack", "simplejpeg", "opencv-python-headless", "numpy")
        },
        "decoder": str(crop_decode.decoder()),
        "corpus": str(args.corpus),
        "native": {
            "sources": str(args.sources),
            "images": args.native,
            "dir": str(args.workdir / "native"),
        },
        "sharpness": sharp_stats,
        "sets": results,
    }
    args.json.write_text(json.dumps(raw, indent=1) + "\n")
    args.out.write_text(page(raw))
    print(page(raw))


def reading(raw: dict[str, Any]) -> list[str]:
    """Where the ways of drawing the box differ, in this run's numbers."""
    rows = {r["max_upscale"]: r for r in raw["sets"][0]["rows"]}

    def mean(upscale: float, drawing: str) -> str:
        return f"{rows[upscale][drawing]['mean']:.1f}"

    return [
        "",
        "## Reading",
        "",
        "fastpack moves a box's edges to the pixel grid of the DCT scale it decodes at (by up "
        "to half a decoded pixel: 1 pixel at 1/2, 2 at 1/4), and `crop()` reports the moved box; "
        "the `fastpack` and `torchvision, snapped` columns compare the output with a reference "
        "of that moved box. On the corpus at max_upscale 2, boxes drawn by torchvision's "
        "algorithm with another generator and moved the same way give "
        f"{mean(2.0, 'torchvision, snapped')} dB against {mean(2.0, 'fastpack')} dB for "
        "fastpack's draws; the same boxes rendered unmoved and compared with a reference of the "
        f"box as drawn give {mean(2.0, 'torchvision, as drawn')} dB: there the shift of up to "
        "half a decoded pixel counts as error. Only images decoded at reduced scale shift; at "
        f"max_upscale 1 ({100 * rows[1.0]['reduced']:.0f}% of them) the two columns read "
        f"{mean(1.0, 'torchvision, snapped')} and {mean(1.0, 'torchvision, as drawn')} dB. "
        "The images differ too: over the first 400 of the listing (mean / 5th percentile), "
        + "; ".join(
            f"max_upscale {u}: {first_400(raw, u, 'fastpack')} with fastpack's draws, "
            f"{first_400(raw, u, 'torchvision, as drawn')} with torchvision's as drawn"
            for u in ("1", "2")
        )
        + ".",
    ]


def first_400(raw: dict[str, Any], upscale: str, drawing: str) -> str:
    values = np.asarray(raw["sets"][0]["psnr_per_image"][upscale][drawing][:400])
    return f"{values.mean():.1f} / {np.percentile(values, 5):.1f} dB"


def page(raw: dict[str, Any]) -> str:
    info = raw["machine"]
    sharp = raw["sharpness"]
    lines = [
        "# RandomResizedCrop quality against a full-decode reference",
        "",
        "Produced by `python -m benchmarks.readers.quality_bench` (its docstring says what "
        "is measured); "
        "raw numbers: `quality_results.json`.",
        "",
        f"- Date: {raw['date']}; fastpack commit {raw['commit']}",
        f"- Machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}; one process",
        f"- Load average (1, 5, 15 min) before: {raw['load_before']}; after: {raw['load_after']}",
        "- Versions: "
        + ", ".join(f"{k} {v}" for k, v in raw["versions"].items())
        + f"; window decoder: {raw['decoder']}",
        f"- Corpus: `{raw['corpus']}` (photos cut from wallpapers, downscaled to 500 pixels, "
        "`/work/shared/tools/make_photo_corpus.py`)",
    ]
    if raw["native"]["images"]:
        lines.append(
            f"- Native: {raw['native']['images']} windows of 500 pixels cut from "
            f"`{raw['native']['sources']}` at the photos' own resolution (quality 90, 4:2:0)"
        )
    lines += [
        "- Reference: full decode of the same box + `cv2.INTER_AREA`; PSNR 99 dB where identical",
        "",
        "## Sharpness",
        "",
        "Share of luma energy above half Nyquist (Hann window, mean removed), and the variance "
        "of the Laplacian, per image. *Sharp*: the quarter of the corpus with the largest "
        f"share (at least {sharp['sharp']['hf_share_min']:.4f}; "
        f"{sharp['sharp']['images']} images).",
        "",
        "| set | measure | min | 5% | 25% | median | 75% | 95% | max |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    index = next(r["index"] for r in raw["sets"] if r["set"] == "sharp")
    groups = {name: sharp[name] for name in ("corpus", "native") if name in sharp}
    groups["sharp"] = {
        key: distribution([sharp["corpus"][f"{key}_values"][i] for i in index])
        for key in ("hf_share", "laplacian_var")
    }
    for name, values in groups.items():
        for key, label, fmt in (
            ("hf_share", "energy above half Nyquist", "{:.4f}"),
            ("laplacian_var", "Laplacian variance", "{:.0f}"),
        ):
            d = values[key]
            lines.append(
                f"| {name} | {label} | "
                + " | ".join(fmt.format(d[f"p{q}"]) for q in (0, 5, 25, 50, 75, 95, 100))
                + " |"
            )
    lines += reading(raw)
    for result in raw["sets"]:
        ms = result["ms"]
        lines += [
            "",
            f"## {result['set']} ({result['images']} images)",
            "",
            "PSNR dB, mean / 5th percentile / min. ms: CPU time per image of the fastpack "
            f"draws' renders in one process, median of {len(ms['full decode']['passes'])} "
            "alternating passes (range in brackets; wall times in the JSON); a full decode "
            f"alone: {ms['full decode']['cpu_median']:.3f} ms. 1-minute load average before / "
            f"after the timing: {result['load_1min'][0]:.2f} / {result['load_1min'][1]:.2f}.",
            "",
            "| max_upscale | reduced scale | fastpack draws | torchvision draws, snapped "
            "| torchvision draws, as drawn | ms window decoder | ms simplejpeg |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in result["rows"]:
            u = row["max_upscale"]
            cells = [
                f"{row[d]['mean']:.1f} / {row[d]['p5']:.1f} / {row[d]['min']:.1f}" for d in DRAWINGS
            ]
            timing = [
                f"{ms[f'{u:g} {k}']['cpu_median']:.3f} "
                f"[{ms[f'{u:g} {k}']['cpu_min']:.3f}-{ms[f'{u:g} {k}']['cpu_max']:.3f}]"
                for k in ("window", "simplejpeg")
            ]
            lines.append(
                f"| {u:g} | {100 * row['reduced']:.0f}% | " + " | ".join(cells + timing) + " |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
