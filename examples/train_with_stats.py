"""Train a small model and log what the loader is doing every few steps: `loader.stats()`.

    python examples/train_with_stats.py /data/imagenet-fastpack --log-every 100
    python examples/train_with_stats.py /tmp/drawn --draw 512    # draws and builds a set first

Every `--log-every` steps the log gets `loader.stats().format()`: the batches and images/s since
the last line, the share of the time the trainer waited for data, how the workers spent theirs
(decoding, reading, allocating, idle), the bytes read and fetched, and a verdict that names the
bottleneck. `--step-ms` adds a sleep to each step, a stand-in for a larger model: watch the
verdict move from the loader to the training step.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

import fastpack
from fastpack.synthetic import make_image_folder

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", type=Path, help="a fastpack dataset (--draw: where to build one)")
    p.add_argument("--draw", type=int, default=0, help="draw and build this many images first")
    p.add_argument("--workers", type=int, default=2, help="loader workers")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=60, help="training steps")
    p.add_argument("--log-every", type=int, default=20, help="steps between two stats lines")
    p.add_argument("--size", type=int, default=64, help="crop size")
    p.add_argument("--step-ms", type=float, default=0, help="extra time per training step")
    return p.parse_args()


def draw_dataset(out: Path, images: int) -> None:
    """A drawn ImageFolder (one shape and colour per class), built into `out`."""
    with tempfile.TemporaryDirectory() as tmp:
        source = make_image_folder(Path(tmp) / "src", images=images, classes=4, max_side=320)
        fastpack.build(source, out, fastpack.BuildOptions(workers=1, progress=False))


def make_model(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=4, stride=4),
        nn.ReLU(),
        nn.Conv2d(16, 32, kernel_size=3, stride=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, classes),
    )


def main() -> None:
    args = parse_args()
    if args.draw:
        draw_dataset(args.dataset, args.draw)
    dataset = fastpack.Dataset(args.dataset, transform=fastpack.RandomResizedCrop(args.size))
    loader = fastpack.make_loader(
        dataset, batch_size=args.batch_size, num_workers=args.workers, drop_last=True
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = make_model(len(dataset.classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    print(f"{len(dataset)} samples, {len(dataset.classes)} classes, training on {device}")

    step, epoch = 0, 0
    while step < args.steps:
        dataset.set_epoch(epoch)
        for images, labels in loader:
            x = fastpack.to_float(images, mean=MEAN, std=STD, device=device)
            loss = nn.functional.cross_entropy(model(x), labels.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            time.sleep(args.step_ms / 1000)
            step += 1
            if step % args.log_every == 0:
                print(f"step {step} loss {loss.item():.4f}")
                print(loader.stats().format())  # the interval since the previous call
            if step == args.steps:
                break
        epoch += 1


if __name__ == "__main__":
    main()
