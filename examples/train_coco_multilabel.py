"""Compile a COCO instances file with fastpack and train a multi-label classifier and a box
counter on its labels and boxes.

    python examples/train_coco_multilabel.py coco/annotations/instances_val2017.json /data/coco-fp
    python examples/train_coco_multilabel.py /tmp/coco-demo      # or --demo: a synthetic set

Without an instances file (or with --demo) it first draws a small COCO-style set in a temporary
directory: coloured rectangles on noise, of the categories red, green and blue, each rectangle
an annotation whose bbox is the rectangle. So it runs anywhere, on the CPU or a GPU.

A batch is `(images, labels, boxes)`, one value per field asked for: images uint8 (B, S, S, 3),
cropped by RandomResizedCrop; `labels.json` (each annotation's category, 0..K-1) and `boxes.npy`
(x0 y0 x1 y1) have a length per image, so with `pad=True` each comes as `Padded(values,
lengths)`: values (B, L) int64 and (B, L, 4) float32, each image's `lengths[k]` rows first, then
padding. The boxes have followed the crop (moved, scaled, flipped, clipped to it);
`drop_empty_boxes=False` keeps those the crop cut away, with zero width or height, so that box k
and label k stay one annotation. The targets are what the crop shows: the multi-hot of the
classes of the boxes with area left (BCE loss), and how many they are (the "detector" head, a
regression on the count).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import simplejpeg
import torch
from fastpack.reader.fields import Padded
from torch import nn

import fastpack

MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)
COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (40, 60, 230)}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("source", type=Path, nargs="?", help="COCO instances JSON (default: --demo)")
    p.add_argument("out", type=Path, help="dataset directory to write")
    p.add_argument("--demo", action="store_true", help="build a synthetic COCO-style set")
    p.add_argument("--demo-images", type=int, default=96, help="images of the synthetic set")
    p.add_argument("--images", type=Path, help="the images directory (default: found by fastpack)")
    p.add_argument("--skip-build", action="store_true", help="OUT is already built")
    p.add_argument("--workers", type=int, default=2, help="build processes and loader workers")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=60, help="training steps")
    p.add_argument("--size", type=int, default=64, help="crop size")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.demo and args.source is not None:
        p.error("--demo draws its own source; give OUT alone")
    return args


def draw_demo_coco(root: Path, images: int, seed: int) -> Path:
    """A COCO instances file under `root` and its JPEGs beside it: 0 to 3 rectangles per image,
    each an annotation of the category of its colour; the file's path."""
    rng = np.random.default_rng(seed)
    names = list(COLOURS)
    entries: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for i in range(images):
        height, width = int(rng.integers(72, 112)), int(rng.integers(88, 136))
        pixels = rng.integers(0, 90, (height, width, 3), dtype=np.uint8)  # dark noise
        for _ in range(int(rng.integers(0, 4))):
            category = int(rng.integers(len(names)))
            w, h = int(rng.integers(14, width // 2)), int(rng.integers(14, height // 2))
            x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
            pixels[y : y + h, x : x + w] = COLOURS[names[category]]
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": i + 1,
                    "category_id": category + 1,
                    "bbox": [x, y, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                    "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]],
                }
            )
        name = f"{i:06d}.jpg"
        (root / name).write_bytes(simplejpeg.encode_jpeg(pixels, quality=90))
        entries.append({"id": i + 1, "file_name": name, "height": height, "width": width})
    categories = [{"id": k + 1, "name": n} for k, n in enumerate(names)]
    path = root / "instances_demo.json"
    coco = {"images": entries, "annotations": annotations, "categories": categories}
    path.write_text(json.dumps(coco))
    return path


def build(args: argparse.Namespace) -> None:
    if args.skip_build:
        return
    with tempfile.TemporaryDirectory() as tmp:
        source, images = args.source, args.images
        if source is None:  # --demo, or no source given; the dataset keeps its own copy
            source, images = draw_demo_coco(Path(tmp), args.demo_images, args.seed), Path(tmp)
        options = fastpack.BuildOptions(
            source_format="coco",
            images_root=None if images is None else str(images),
            workers=max(1, args.workers),
        )
        print(fastpack.build(source, args.out, options).format())


class Model(nn.Module):
    """A small conv net and two heads: one logit per class, and the count of boxes."""

    def __init__(self, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, kernel_size=4, stride=4),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.AdaptiveMaxPool2d(1),  # "is there one anywhere": a max, not a mean
            nn.Flatten(),
        )
        self.classes = nn.Linear(64, classes)
        self.count = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.features(x)
        return self.classes(features), self.count(features).squeeze(1)


def targets(labels: Padded, boxes: Padded, classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The multi-hot `(B, classes)` of the annotations the crop shows, and their count `(B,)`."""
    values, lengths = labels
    rows = torch.arange(values.shape[1])
    real = rows[None, :] < lengths[:, None]  # (B, L): an annotation, not padding
    sizes = boxes.values[..., 2:] - boxes.values[..., :2]  # (B, L, 2): width and height
    shown = real & (sizes > 0).all(dim=-1)  # the crop left it some area
    hot = torch.zeros(len(values), classes)
    image = torch.arange(len(values))[:, None].expand_as(values)
    hot[image[shown], values[shown]] = 1.0
    return hot, shown.sum(dim=1).float()


def describe(images: torch.Tensor, labels: Padded, boxes: Padded) -> str:
    def shape(t: torch.Tensor) -> str:
        return f"{str(t.dtype).removeprefix('torch.')} {tuple(t.shape)}"

    return (
        f"batch: images {shape(images)}, labels.json values {shape(labels.values)} lengths "
        f"{shape(labels.lengths)}, boxes.npy values {shape(boxes.values)} lengths "
        f"{shape(boxes.lengths)}"
    )


def main() -> None:
    args = parse_args()
    build(args)
    torch.manual_seed(args.seed)
    dataset = fastpack.Dataset(
        args.out,
        transform=fastpack.RandomResizedCrop(args.size, scale=(0.25, 1.0)),
        fields=("jpg", "labels.json", "boxes.npy"),
        pad=True,
        drop_empty_boxes=False,  # keep box k paired with label k
        seed=args.seed,
    )
    names = dataset.manifest.schema["labels.json"].classes
    loader = fastpack.make_loader(
        dataset,
        batch_size=args.batch_size,
        num_workers=args.workers,
        drop_last=True,
        seed=args.seed,
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Model(len(names)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    print(f"{len(dataset)} images, classes {', '.join(names)}, training on {device}")

    step, epoch, started = 0, 0, time.perf_counter()
    while step < args.steps:
        dataset.set_epoch(epoch)  # a new shuffle and new crops every epoch
        for images, labels, boxes in loader:
            if step == 0:
                print(describe(images, labels, boxes))
            hot, count = (t.to(device) for t in targets(labels, boxes, len(names)))
            logits, predicted = model(fastpack.to_float(images, mean=MEAN, std=STD, device=device))
            bce = nn.functional.binary_cross_entropy_with_logits(logits, hot)
            counting = nn.functional.smooth_l1_loss(predicted, count)
            loss = bce + counting
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            print(
                f"step {step} loss {loss.item():.4f} (bce {bce.item():.4f}, "
                f"count {counting.item():.4f})"
            )
            if step == args.steps:
                break
        epoch += 1
    print(f"trained {step} steps in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
