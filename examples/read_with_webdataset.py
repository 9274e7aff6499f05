"""Read fastpack shards with the webdataset library: they are plain webdataset tars.

    python examples/read_with_webdataset.py /data/imagenet-fastpack --batch-size 64

Every sample is `<key>.jpg` + `<key>.cls`; nothing here needs fastpack itself.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import simplejpeg
import webdataset as wds


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", type=Path, help="a fastpack dataset directory")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", type=int, default=224, help="resize every image to SIZE x SIZE")
    return p.parse_args()


def decode(sample: dict[str, Any], size: int) -> tuple[np.ndarray, int]:
    image = simplejpeg.decode_jpeg(sample["jpg"], colorspace="RGB")
    image = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)
    return image, int(sample["cls"])


def main() -> None:
    args = parse_args()
    shards = sorted(str(p) for p in (args.dataset / "shards").glob("*.tar"))
    pipeline = (
        wds.WebDataset(shards, shardshuffle=False)
        .map(lambda sample: decode(sample, args.size))
        .batched(args.batch_size, partial=True)
    )
    labels: Counter[int] = Counter()
    batches = 0
    for images, batch_labels in pipeline:
        batches += 1
        labels.update(int(label) for label in batch_labels)
        if batches == 1:
            print(f"first batch: images {images.dtype} {images.shape}, labels {batch_labels[:8]}")
    print(f"read {labels.total()} samples in {batches} batches from {len(shards)} shards")
    print("samples per label: " + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())))


if __name__ == "__main__":
    main()
