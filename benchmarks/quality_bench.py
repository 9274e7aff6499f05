"""Image quality and cost of fastpack's RandomResizedCrop against a full-decode reference.

For every JPEG of a corpus, one RandomResizedCrop box (seeded by the image's position) is rendered
by fastpack (`max_upscale` 1, 1.5 and 2: decode at the cheapest DCT scale, bilinear resize) and by
the reference: a full-size decode of the same box + `cv2.INTER_AREA` resize. The table gives the
PSNR of fastpack's output against the reference (mean, 5th percentile, minimum), the share of
images decoded at reduced scale, and the time per image in one process against a full decode
alone of the same bytes (best of `--repeats` passes).

    python -m benchmarks.quality_bench --corpus /tmp/photo-corpus --out benchmarks/QUALITY.md
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import simplejpeg
from fastpack.reader import RandomResizedCrop
from fastpack.reader.image import Box, sample_draws

from ._sysinfo import load, machine, versions
from .peers._base import imagefolder_root, list_imagefolder

SIZE = 224
UPSCALES = (1.0, 1.5, 2.0)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * math.log10(255**2 / mse)


def reference(data: bytes, box: Box, flip: bool) -> np.ndarray:
    """Full decode, the same box, INTER_AREA to SIZE x SIZE, mirrored like fastpack's output."""
    image = simplejpeg.decode_jpeg(data, colorspace="RGB")
    top, left, height, width = (int(v) for v in (box.top, box.left, box.height, box.width))
    out = cv2.resize(
        image[top : top + height, left : left + width], (SIZE, SIZE), interpolation=cv2.INTER_AREA
    )
    return out[:, ::-1] if flip else out


def best_ms(blobs: list[bytes], work: Callable[[int, bytes], object], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for i, data in enumerate(blobs):
            work(i, data)
        best = min(best, time.perf_counter() - start)
    return 1000 * best / len(blobs)


def measure(blobs: list[bytes], upscale: float, repeats: int) -> dict[str, float]:
    transform = RandomResizedCrop(SIZE, max_upscale=upscale)
    out = np.empty((SIZE, SIZE, 3), np.uint8)
    draws = sample_draws(0, 0, range(len(blobs)), transform.draws).tolist()
    scores, reduced = [], 0
    for i, data in enumerate(blobs):
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        box, flip, shift = transform._plan(height, width, draws[i])
        transform(data, draws[i], out)
        scores.append(psnr(out, reference(data, box, flip)))
        reduced += shift > 0
    ms = best_ms(blobs, lambda i, data: transform(data, draws[i], out), repeats)
    return {
        "upscale": upscale,
        "mean": float(np.mean(scores)),
        "p5": float(np.percentile(scores, 5)),
        "min": float(np.min(scores)),
        "reduced": reduced / len(blobs),
        "ms": ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/QUALITY.md"))
    args = parser.parse_args()
    cv2.setNumThreads(1)
    blobs = [s.path.read_bytes() for s in list_imagefolder(imagefolder_root(args.corpus))]
    before = load()
    decode_ms = best_ms(blobs, lambda _, data: simplejpeg.decode_jpeg(data), args.repeats)
    rows = [measure(blobs, upscale, args.repeats) for upscale in UPSCALES]
    info, libs = machine(), versions()
    lines = [
        "# RandomResizedCrop quality against a full-decode reference",
        "",
        "Produced by `python -m benchmarks.quality_bench` (see its docstring).",
        "",
        f"- Machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}; one process",
        f"- Load average before: {before}; after: {load()}",
        f"- Corpus: `{args.corpus}`, {len(blobs)} JPEGs; one {SIZE}x{SIZE} crop per image "
        "(scale 0.08-1, ratio 3/4-4/3, flip 0.5)",
        f"- Versions: simplejpeg {libs['simplejpeg']}, opencv-python-headless "
        f"{libs['opencv-python-headless']}, numpy {libs['numpy']}",
        "- Reference: full decode of the same box + `cv2.INTER_AREA` resize",
        f"- Full decode alone (simplejpeg, RGB): {decode_ms:.3f} ms/image, best of "
        f"{args.repeats} passes",
        "",
        "| max_upscale | PSNR mean dB | PSNR 5th percentile | PSNR min | decoded at reduced scale "
        "| ms/image | x full decode time |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['upscale']:g} | {r['mean']:.1f} | {r['p5']:.1f} | {r['min']:.1f} | "
        f"{100 * r['reduced']:.0f}% | {r['ms']:.3f} | {r['ms'] / decode_ms:.2f} |"
        for r in rows
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
