"""Compile an ImageFolder with fastpack and train a small model from the shards.

    python examples/build_and_train.py /data/imagenet/train /data/imagenet-fastpack

A second run with the same OUT resumes nothing and rebuilds nothing: pass --skip-build to train
from an existing dataset.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch import nn

import fastpack

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("source", type=Path, help="ImageFolder: SOURCE/<class>/<image>")
    p.add_argument("out", type=Path, help="dataset directory to write")
    p.add_argument("--skip-build", action="store_true", help="OUT is already built")
    p.add_argument("--workers", type=int, default=2, help="build processes and loader workers")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=50, help="training steps")
    p.add_argument("--size", type=int, default=224, help="crop size")
    return p.parse_args()


def make_model(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, kernel_size=8, stride=8),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, kernel_size=3, stride=2),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, classes),
    )


def main() -> None:
    args = parse_args()
    if not args.skip_build:
        options = fastpack.BuildOptions(workers=args.workers)
        print(fastpack.build(args.source, args.out, options).format())

    dataset = fastpack.Dataset(args.out, transform=fastpack.RandomResizedCrop(args.size))
    loader = fastpack.make_loader(
        dataset, batch_size=args.batch_size, num_workers=args.workers, drop_last=True
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = make_model(len(dataset.classes)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    print(f"{len(dataset)} samples, {len(dataset.classes)} classes, training on {device}")

    step, seen, started = 0, 0, time.perf_counter()
    epoch = 0
    while step < args.steps:
        dataset.set_epoch(epoch)  # a new shuffle and new random crops every epoch
        for images, labels in loader:  # uint8 (B, H, W, 3) and int64 (B,), on the host
            x = fastpack.to_float(images, mean=MEAN, std=STD, device=device)  # float NCHW
            loss = nn.functional.cross_entropy(model(x), labels.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step, seen = step + 1, seen + len(labels)
            print(f"step {step} loss {loss.item():.4f}")
            if step == args.steps:
                break
        epoch += 1
    seconds = time.perf_counter() - started
    print(f"trained {step} steps, {seen} images in {seconds:.1f} s ({seen / seconds:.0f} images/s)")


if __name__ == "__main__":
    main()
