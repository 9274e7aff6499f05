"""DALI's version-2 mask path on the GPU: masks that follow their images through nvJPEG decode,
crops, flips and resizes, checked against the CPU path, and images/s with and without masks.

    python -m benchmarks.gpu.gpu_masks_bench --out gpu_masks.json   # with a GPU and DALI

The dataset is made here: `--samples` images whose pixels are the palette colours of a cell
pattern, each with that pattern as its PNG mask (the pattern of tests/reader/dali/test_fields.py),
written with the format's own writers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import simplejpeg
import torch
from fastpack.formats import Schema
from fastpack.reader import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    CenterCrop,
    DaliOptions,
    RandomResizedCrop,
    make_dali_loader,
)

from benchmarks.gpu.gpu_bench import gpu_info
from tests.formats._v2 import spec, write_v2_dataset
from tests.reader.dali.test_fields import PALETTE, cells, png

SCHEMA = Schema(
    (spec("jpg", "jpeg"), spec("cls", "class"), spec("seg.png", "png", geometry="mask"))
)


def sample(i: int) -> dict[str, Any]:
    height, width = 360 + 8 * (i % 7), 480 - 6 * (i % 5)
    mask = cells(height, width, i)
    image = PALETTE[mask].astype(np.uint8)
    jpeg = simplejpeg.encode_jpeg(image, quality=95, colorsubsampling="444")
    return {"jpg": jpeg, "cls": i % 1000, "seg.png": png(mask)}


def loader(path: Path, args: argparse.Namespace, *, train: bool, device: str, masks: bool) -> Any:
    return make_dali_loader(
        path,
        batch_size=args.batch_size,
        transform=RandomResizedCrop(224) if train else CenterCrop(224),
        dali=DaliOptions(device=device, device_id=0 if device == "gpu" else None),  # type: ignore[arg-type]
        num_workers=args.threads,
        seed=1,
        fields=("seg.png",) if masks else (),
    )


def to_uint8_hwc(images: torch.Tensor) -> np.ndarray:
    """Normalized float (B, 3, H, W) back to uint8 (B, H, W, 3)."""
    mean = torch.tensor(IMAGENET_MEAN, device=images.device).view(1, 3, 1, 1) * 255
    std = torch.tensor(IMAGENET_STD, device=images.device).view(1, 3, 1, 1) * 255
    pixels = (images.float() * std + mean).round().clamp(0, 255).to(torch.uint8)
    return pixels.permute(0, 2, 3, 1).cpu().numpy()


def agreement(images: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Per image: the share of pixels whose colour is nearest the palette colour of its mask."""
    pixels = images.astype(np.int32)[..., None, :]
    nearest = np.abs(pixels - PALETTE[None, None, None, 1:]).sum(axis=4).argmin(axis=3) + 1
    result: np.ndarray = (nearest == masks).mean(axis=(1, 2))
    return result


def check(path: Path, args: argparse.Namespace, *, train: bool) -> dict[str, Any]:
    """One epoch on the GPU with masks: shapes, devices, mask values, agreement with the image
    (and with the flipped mask, which a missed flip would match); eval also against the CPU."""
    seen: list[int] = []
    agree: list[float] = []
    flipped: list[float] = []
    gpu_masks: list[np.ndarray] = []
    shapes = set()
    for images, labels, fields in loader(path, args, train=train, device="gpu", masks=True):
        mask = fields["seg.png"]
        shapes.add((tuple(images.shape), str(images.device), tuple(mask.shape), str(mask.device)))
        m = mask[:, 0].cpu().numpy()
        hwc = to_uint8_hwc(images)
        agree += agreement(hwc, m).tolist()
        flipped += agreement(hwc, m[:, :, ::-1]).tolist()
        seen += labels.cpu().tolist()
        if not train:
            gpu_masks.append(m)
    values = sorted({int(v) for v in np.unique(m)})
    report: dict[str, Any] = {
        "samples": len(seen),
        "distinct_labels": len(set(seen)),
        "shapes": sorted(shapes),
        "mask_values_last_batch": values,
        "agreement_min": min(agree),
        "agreement_median": statistics.median(agree),
        "flipped_agreement_median": statistics.median(flipped),
    }
    if not train:
        cpu = [
            f["seg.png"].numpy()[..., 0]
            for _, _, f in loader(path, args, train=False, device="cpu", masks=True)
        ]
        both = zip(np.concatenate(gpu_masks), np.concatenate(cpu), strict=True)
        report["masks_equal_cpu_share"] = float(np.mean([np.array_equal(g, c) for g, c in both]))
    return report


def rate(path: Path, args: argparse.Namespace, *, train: bool, masks: bool) -> dict[str, Any]:
    """Images/s over `--epochs` epochs (after one warm-up epoch), synchronised on the GPU."""
    it = loader(path, args, train=train, device="gpu", masks=masks)
    for _ in it:
        pass
    rates = []
    for _ in range(args.epochs):
        start, count = time.perf_counter(), 0
        for images, _labels, *_ in it:
            count += images.shape[0]
        torch.cuda.synchronize()
        rates.append(count / (time.perf_counter() - start))
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/gpu-masks"))
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--commit", default="?")
    args = parser.parse_args()
    path = args.workdir / "ds"
    if not path.exists():
        write_v2_dataset(
            path, SCHEMA, [sample(i) for i in range(args.samples)], samples_per_shard=512
        )
    report: dict[str, Any] = {
        "commit": args.commit,
        "gpu": gpu_info(),
        "samples": args.samples,
        "batch_size": args.batch_size,
        "threads": args.threads,
    }
    report["eval_check"] = check(path, args, train=False)
    report["train_check"] = check(path, args, train=True)
    for train in (True, False):
        for masks in (False, True):
            name = f"{'train' if train else 'eval'}_{'masks' if masks else 'images'}"
            report[name] = rate(path, args, train=train, masks=masks)
    args.out.write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
