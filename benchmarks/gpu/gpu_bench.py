"""GPU record: DALI's GPU (nvJPEG) pipelines over a fastpack dataset, checked against DALI's CPU
path and timed at one batch size, and `to_float` on the GPU. Needs a CUDA GPU, DALI and torch;
writes a JSON report (GPU.md is written from it).

    python -m benchmarks.gpu.gpu_bench --corpus /tmp/corpus --workdir /tmp/gpu-bench --out gpu.json

Checks, on the whole dataset:
- evaluation pipeline, GPU and CPU side by side (same order): labels equal to each other and to
  the dataset's, images float32 (B, 3, S, S) on the GPU; pixel differences between the GPU's
  output and the CPU's uint8 output normalized by `to_float` on the GPU, in 0..255 units, and
  each image's PSNR;
- training pipeline on the GPU: shapes, dtypes, devices, and every sample once per epoch.
Timings: images/s per epoch after one warm-up epoch, for train and eval, GPU and CPU decode (the
CPU path's uint8 batches go through `to_float` to the GPU, so both end as normalized GPU floats).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import nvidia.dali
import torch
from fastpack.compiler import BuildOptions, build
from fastpack.reader import (
    CenterCrop,
    DaliOptions,
    Dataset,
    RandomResizedCrop,
    make_dali_loader,
    to_float,
)

from benchmarks import sysinfo as _sysinfo


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="ImageFolder root")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/gpu-bench"))
    parser.add_argument("--out", type=Path, required=True, help="JSON report")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=5, help="timed epochs per configuration")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--commit", default="?", help="fastpack commit measured")
    parser.add_argument("--shard-format", default="tar", choices=("tar", "tfrecord"))
    return parser.parse_args(argv)


def build_dataset(corpus: Path, out: Path, shard_format: str) -> dict[str, Any]:
    seconds = None
    if not (out / "manifest.json").exists():
        started = time.perf_counter()
        options = BuildOptions(shard_size=64 * 2**20, progress=False, shard_format=shard_format)  # type: ignore[arg-type]
        build(corpus, out, options)
        seconds = round(time.perf_counter() - started, 2)
    shards = sorted(out.glob(f"shards/*.{shard_format}"))
    return {"path": str(out), "shards": len(shards), "build_s": seconds, "format": shard_format}


def _loader(path: Path, args: argparse.Namespace, *, train: bool, device: str) -> Any:
    return make_dali_loader(
        path,
        batch_size=args.batch_size,
        transform=RandomResizedCrop(224) if train else CenterCrop(224),
        dali=DaliOptions(device=device, device_id=0 if device == "gpu" else None),  # type: ignore[arg-type]
        num_workers=args.threads,
        seed=1,
    )


def check_eval(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """GPU and CPU evaluation pipelines side by side over one epoch."""

    truth = Dataset(path).labels.tolist()
    gpu, cpu = (
        _loader(path, args, train=False, device="gpu"),
        _loader(path, args, train=False, device="cpu"),
    )
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1) * 255
    labels: list[int] = []
    psnr: list[float] = []
    abs_sum, count, worst, problems = 0.0, 0, 0.0, []
    for (g_images, g_labels), (c_images, c_labels) in zip(gpu, cpu, strict=True):
        if g_images.dtype != torch.float32 or not g_images.is_cuda:
            problems.append(f"GPU images {g_images.dtype} on {g_images.device}")
        if tuple(g_images.shape[1:]) != (3, 224, 224):
            problems.append(f"GPU images shape {tuple(g_images.shape)}")
        if not torch.equal(g_labels.cpu(), c_labels):
            problems.append("GPU and CPU labels differ")
        labels += c_labels.tolist()
        diff = (g_images - to_float(c_images, device="cuda")) * std  # 0..255 units
        abs_sum += float(diff.abs().sum())
        count += diff.numel()
        worst = max(worst, float(diff.abs().max()))
        mse = diff.square().mean(dim=(1, 2, 3)).clamp_min(1e-10)
        psnr += (10 * torch.log10(255.0**2 / mse)).tolist()
    gpu.close()
    cpu.close()
    return {
        "samples": len(labels),
        "labels_in_dataset_order": labels == truth,
        "labels_same_multiset": Counter(labels) == Counter(truth),
        "problems": sorted(set(problems)),
        "mean_abs_diff_0_255": abs_sum / count,
        "max_abs_diff_0_255": worst,
        "psnr_db_median": statistics.median(psnr),
        "psnr_db_min": min(psnr),
        "psnr_db_p1": float(np.percentile(psnr, 1)),
    }


def check_train(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One epoch of the GPU training pipeline: shapes, devices, every sample once."""

    truth = Counter(Dataset(path).labels.tolist())
    loader = _loader(path, args, train=True, device="gpu")
    labels: list[int] = []
    shapes, means, stds = set(), [], []
    for images, batch_labels in loader:
        shapes.add((str(images.dtype), str(images.device), tuple(images.shape[1:])))
        means.append(float(images.mean()))
        stds.append(float(images.std()))
        labels += batch_labels.cpu().tolist()
        assert batch_labels.dtype == torch.int64
    batches = len(loader)
    loader.close()
    return {
        "samples": len(labels),
        "batches": batches,
        "every_sample_once": Counter(labels) == truth,
        "images": sorted(map(str, shapes)),
        "pixel_mean_range": [min(means), max(means)],
        "pixel_std_range": [min(stds), max(stds)],
    }


def time_loader(
    path: Path, args: argparse.Namespace, *, train: bool, device: str
) -> dict[str, Any]:
    """images/s per epoch (after a warm-up epoch) until the batch is a normalized GPU float."""

    loader = _loader(path, args, train=train, device=device)
    rates = []
    for epoch in range(args.epochs + 1):
        torch.cuda.synchronize()
        started, seen = time.perf_counter(), 0
        for images, _ in loader:
            batch = images if device == "gpu" else to_float(images.pin_memory(), device="cuda")
            seen += batch.shape[0]
        torch.cuda.synchronize()
        if epoch:
            rates.append(seen / (time.perf_counter() - started))
    loader.close()
    return {
        "train": train,
        "device": device,
        "images_per_s_median": statistics.median(rates),
        "range": [min(rates), max(rates)],
        "epochs": len(rates),
    }


def time_to_float(batch_size: int, repeats: int = 50) -> dict[str, Any]:
    """`to_float` of a pinned uint8 (B, 224, 224, 3) batch to the GPU, and of one already there;
    the result against the CPU's."""

    generator = torch.Generator().manual_seed(0)
    host = torch.randint(0, 256, (batch_size, 224, 224, 3), dtype=torch.uint8, generator=generator)
    pinned, on_gpu = host.pin_memory(), host.cuda()

    def timed(images: torch.Tensor) -> list[float]:
        for _ in range(5):
            to_float(images, device="cuda")
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            to_float(images, device="cuda")
            torch.cuda.synchronize()
            times.append(time.perf_counter() - started)
        return times

    copy, convert = timed(pinned), timed(on_gpu)
    error = float((to_float(pinned, device="cuda").cpu() - to_float(host)).abs().max())
    return {
        "batch": list(host.shape),
        "from_pinned_host_ms_median": 1000 * statistics.median(copy),
        "from_pinned_host_ms_range": [1000 * min(copy), 1000 * max(copy)],
        "on_gpu_ms_median": 1000 * statistics.median(convert),
        "on_gpu_ms_range": [1000 * min(convert), 1000 * max(convert)],
        "max_abs_diff_vs_cpu": error,
        "host_to_device_gb_per_s": host.numel() / statistics.median(copy) / 1e9,
    }


def gpu_info() -> dict[str, Any]:
    query = "name,driver_version,memory.total"
    done = subprocess.run(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
        check=False,
        capture_output=True,
        text=True,
    )

    return {
        "nvidia_smi": done.stdout.strip(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "dali": nvidia.dali.__version__,
    }


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / f"dataset-{args.shard_format}"
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": args.commit,
        "machine": _sysinfo.machine(),
        "gpu": gpu_info(),
        "versions": _sysinfo.versions(),
        "corpus": _sysinfo.corpus(args.corpus),
        "batch_size": args.batch_size,
        "threads": args.threads,
    }
    report["dataset"] = build_dataset(args.corpus, path, args.shard_format)
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "eval_check": partial(check_eval, path, args),
        "train_check": partial(check_train, path, args),
        "to_float": partial(time_to_float, args.batch_size),
    }
    for train in (True, False):
        for device in ("gpu", "cpu"):
            name = f"{'train' if train else 'eval'}_{device}"
            steps[name] = partial(time_loader, path, args, train=train, device=device)
    for name, step in steps.items():
        try:
            report[name] = step()
        except Exception as e:
            report[name] = {"error": f"{type(e).__name__}: {e}"}
        print(name, json.dumps(report[name]), flush=True)
        args.out.write_text(json.dumps(report, indent=2, default=str))
    report["load_after"] = _sysinfo.load()
    args.out.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
