"""Train, be stopped mid-epoch, and resume where the loader was, on another worker count.

    python examples/resume_training.py DATASET ckpt.pt --workers 4 --stop-after 100
    python examples/resume_training.py DATASET ckpt.pt --workers 2 --batch-size 48

The checkpoint holds the model, the optimizer and `loader.state_dict()`: a few integers and
names (the epoch, the position in its order, the dataset's digest and view). The second run
loads it and goes on from that position of the same epoch with whatever workers, batch size
(and, under torchrun, number of ranks) it has: no sample of the epoch is lost or read twice.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch
from torch import nn

import fastpack

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", type=Path, help="a fastpack dataset directory")
    p.add_argument("checkpoint", type=Path, help="checkpoint file: loaded if it exists")
    p.add_argument("--view", default=None, help="train on this view of the dataset")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--stop-after", type=int, default=None, help="stop after N steps (preempted)")
    p.add_argument("--size", type=int, default=64, help="crop size")
    return p.parse_args()


def make_model(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=8, stride=8),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, classes),
    )


def main() -> None:
    args = parse_args()
    dataset = fastpack.Dataset(
        args.dataset, view=args.view, transform=fastpack.RandomResizedCrop(args.size)
    )
    loader = fastpack.make_loader(dataset, batch_size=args.batch_size, num_workers=args.workers)
    model = make_model(len(dataset.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    seen: dict[int, int] = {}  # images per epoch, over every run
    if args.checkpoint.exists():
        saved: dict[str, Any] = torch.load(args.checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])  # sets the dataset's epoch, and where it resumes
        seen = saved["seen"]
        state = saved["loader"]
        print(f"resumed at epoch {state['epoch']}, position {state['position']}")

    steps = 0
    for epoch in range(dataset.epoch, args.epochs):
        dataset.set_epoch(epoch)  # keeps a resumed position when it is the state's epoch
        for images, labels in loader:
            x = fastpack.to_float(images, mean=MEAN, std=STD)
            loss = nn.functional.cross_entropy(model(x), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen[epoch] = seen.get(epoch, 0) + len(labels)
            steps += 1
            if steps == args.stop_after:
                checkpoint = {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "loader": loader.state_dict(),
                    "seen": seen,
                }
                torch.save(checkpoint, args.checkpoint)
                state = checkpoint["loader"]
                print(f"stopped at epoch {state['epoch']}, position {state['position']}")
                return
        print(f"epoch {epoch} done: {seen.get(epoch, 0)} of {len(dataset)} images")


if __name__ == "__main__":
    main()
