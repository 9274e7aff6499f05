"""`make_loader(loader="nvimgcodec")` against the CPU path (`loader="torch"`) on the same
batches: how close its pixels are (PSNR), and what its decode costs in the training process.

For each transform (RandomResizedCrop 224 at `max_upscale` 1 and 2, CenterCrop 224), both
loaders read `--batches` batches of `--batch-size` in the same order with the same crops; the
nvImageCodec batches are mapped back to 0-255 values and compared with the CPU path's uint8
batches (PSNR per batch). Then the nvImageCodec loader alone reads `--epochs` epochs after a
warm-up one: images/s, its `loader.stats()` (`device_decode_seconds` per image), and the
training process's own CPU time per image (user + system of this process: on the GPU, the host
work of the decode; on the CPU backend, the decode itself). `--device` is `cuda` where torch
sees a GPU, else `cpu` (nvImageCodec's CPU backend).

    python -m benchmarks.gpu.device_decode_bench --corpus /tmp/photo-corpus-800/train
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch
from fastpack.compiler import BuildOptions, build
from fastpack.formats import MANIFEST_NAME
from fastpack.reader import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    CenterCrop,
    Dataset,
    RandomResizedCrop,
    make_loader,
)

from benchmarks.sysinfo import DISTRIBUTIONS, corpus, fastpack_commit, load, machine, versions

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TRANSFORMS = {
    "RandomResizedCrop(224)": lambda: RandomResizedCrop(224),
    "RandomResizedCrop(224, max_upscale=2)": lambda: RandomResizedCrop(224, max_upscale=2),
    "CenterCrop(224)": lambda: CenterCrop(224),
}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/photo-corpus-800/train"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-device-decode"))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--commit", default=None, help="fastpack commit measured (default: git)")
    parser.add_argument("--out-json", type=Path, default=HERE / "device_decode_results.json")
    parser.add_argument("--out-md", type=Path, default=HERE / "DEVICE_DECODE.md")
    return parser.parse_args(argv)


def to_pixels(images: torch.Tensor) -> np.ndarray:
    """Normalized float (B, 3, H, W) back to 0-255 values as (B, H, W, 3)."""
    mean = torch.tensor(IMAGENET_MEAN, device=images.device).view(1, 3, 1, 1) * 255
    std = torch.tensor(IMAGENET_STD, device=images.device).view(1, 3, 1, 1) * 255
    pixels: np.ndarray = (images.float() * std + mean).permute(0, 2, 3, 1).cpu().numpy()
    return pixels


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float(10 * np.log10(255**2 / max(mse, 1e-12)))


def agreement(path: Path, args: argparse.Namespace, make: Any) -> list[float]:
    """PSNR of each of the first `args.batches` batches, nvImageCodec against the CPU path."""
    dataset = Dataset(path, transform=make(), seed=1)
    common = {"batch_size": args.batch_size, "num_workers": args.workers, "seed": 3}
    cpu = make_loader(dataset, **common)
    device = make_loader(dataset, **common, loader="nvimgcodec", device=args.device)
    values = []
    for k, ((expected, _), (images, _)) in enumerate(zip(cpu, device, strict=False)):
        if k == args.batches:
            break
        values.append(round(psnr(to_pixels(images), expected.numpy()), 2))
    return values


def alone(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The nvImageCodec loader without a training step: a warm-up epoch, then `args.epochs`."""
    dataset = Dataset(path, transform=RandomResizedCrop(224), seed=1)
    loader = make_loader(
        dataset,
        batch_size=args.batch_size,
        num_workers=args.workers,
        loader="nvimgcodec",
        device=args.device,
    )
    epochs = []
    for epoch in range(args.epochs + 1):
        dataset.set_epoch(epoch)
        loader.stats()
        cpu_before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        images = 0
        for batch, _ in loader:
            images += len(batch)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
        stats = loader.stats()
        cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (
            cpu_after.ru_stime - cpu_before.ru_stime
        )
        epochs.append(
            {
                "epoch": epoch,
                "images": images,
                "images_per_s": round(images / seconds, 1),
                "trainer_cpu_ms_per_image": round(cpu / images * 1e3, 3),
                "device_decode_ms_per_image": round(
                    (stats.device_decode_seconds or 0) / images * 1e3, 3
                ),
                "wait_share": round(stats.wait_share, 3),
            }
        )
    return {"warm_up": epochs[0], "epochs": epochs[1:]}


def dataset_at(corpus_root: Path, workdir: Path) -> Path:
    out = workdir / "dataset"
    if not (out / MANIFEST_NAME).exists():
        build(corpus_root, out, BuildOptions(workers=2, progress=False))
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    path = dataset_at(args.corpus, args.workdir)
    report: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "load_before": load(),
        "versions": versions((*DISTRIBUTIONS, "nvidia-nvimgcodec-cu12", "nvidia-nvimgcodec-cu13")),
        "commit": args.commit or fastpack_commit(REPO),
        "corpus": corpus(args.corpus),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "psnr_db": {name: agreement(path, args, make) for name, make in TRANSFORMS.items()},
        "alone": alone(path, args),
    }
    report["load_after"] = load()
    args.out_json.write_text(json.dumps(report, indent=2) + "\n")
    args.out_md.write_text(page(report, args.out_json.name))
    print(f"wrote {args.out_json} and {args.out_md}")


def _median_range(values: list[float], digits: int = 1) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def page(report: dict[str, Any], json_name: str) -> str:
    machine_ = report["machine"]
    s = report["settings"]
    epochs = report["alone"]["epochs"]
    lines = [
        "# Decoding on the trainer's device: nvImageCodec against the CPU path",
        "",
        f"Measured {report['date']} at fastpack {report['commit']} on {machine_['cpu']} "
        f"({machine_['cores']} cores, {machine_['ram_gib']} GiB); GPU: {report['gpu'] or 'none'}"
        f" (device `{s['device']}`). Load (1, 5, 15 min) {report['load_before']} before, "
        f"{report['load_after']} after. Raw numbers: `{json_name}`. Corpus: "
        f"{report['corpus']['images']:,} photos of {report['corpus']['mean_kb']} KB, "
        f"{report['corpus']['mean_hw'][0]}x{report['corpus']['mean_hw'][1]} px on average. "
        f"Batch {s['batch_size']}, {s['workers']} workers.",
        "",
        '`make_loader(loader="nvimgcodec")` decodes each crop\'s region of the full-size image '
        "and resizes it with antialiased bilinear filtering; the CPU path decodes the same region "
        "at the DCT scale it needs and resizes from there. Same batches, same regions and flips. "
        f"PSNR of the first {s['batches']} batches, each against the CPU path's, median (range), "
        "in dB:",
        "",
        "| transform | PSNR dB |",
        "|---|---:|",
    ]
    for name, values in report["psnr_db"].items():
        lines.append(f"| `{name}` | {_median_range(values)} |")
    lines += [
        "",
        f"The loader alone, RandomResizedCrop(224), {len(epochs)} epochs after a warm-up one, "
        "median (range) over epochs:",
        "",
        "| images/s | trainer CPU ms/image | device decode ms/image | wait share |",
        "|---:|---:|---:|---:|",
        "| "
        + " | ".join(
            _median_range([e[key] for e in epochs], digits)
            for key, digits in (
                ("images_per_s", 0),
                ("trainer_cpu_ms_per_image", 3),
                ("device_decode_ms_per_image", 3),
                ("wait_share", 2),
            )
        )
        + " |",
        "",
        "Trainer CPU: user + system time of the training process per image (on the CPU backend "
        "that is the decode itself, run by nvImageCodec's threads; on a GPU, the host side of the "
        "decode and the launches of the resize). Device decode: `loader.stats()`'s "
        "`device_decode_seconds`, the trainer's time in the decode call.",
        "",
    ]
    if report["gpu"] is None:
        lines += [
            "**GPU figures pending**: no GPU on this machine; the decode ran on nvImageCodec's "
            "CPU backend, the path the tests run. On a GPU machine the same command measures the "
            "GPU path (`--device cuda`, the default where torch sees a GPU).",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
