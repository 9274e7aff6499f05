"""Read fastpack shards with NVIDIA DALI's webdataset reader and the shards' .idx files.

    python examples/read_with_dali.py /data/imagenet-fastpack --batch-size 64

On a machine with a GPU the JPEGs are decoded there (`device="mixed"`); without one the pipeline
runs on the CPU (`device_id=None`).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.backend import GetCUDADeviceCount


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", type=Path, help="a fastpack dataset directory")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", type=int, default=224, help="resize every image to SIZE x SIZE")
    p.add_argument("--threads", type=int, default=2, help="DALI CPU threads")
    p.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    return p.parse_args()


def has_gpu() -> bool:
    try:
        return int(GetCUDADeviceCount()) > 0
    except RuntimeError:
        return False


@pipeline_def
def shard_pipeline(tars: list[str], indexes: list[str], size: int, gpu: bool) -> Any:
    jpegs, labels = fn.readers.webdataset(
        paths=tars,
        index_paths=indexes,
        ext=["jpg", "cls"],
        missing_component_behavior="error",
        random_shuffle=True,
        initial_fill=1024,
        name="reader",
    )
    images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB)
    images = fn.resize(images, resize_x=size, resize_y=size)
    return images, labels


def main() -> None:
    args = parse_args()
    manifest = json.loads((args.dataset / "fastpack.json").read_text())
    tars = [str(args.dataset / s["name"]) for s in manifest["shards"]]
    indexes = [str(args.dataset / s["index_name"]) for s in manifest["shards"]]
    gpu = args.device == "gpu" or (args.device == "auto" and has_gpu())
    pipe = shard_pipeline(
        tars,
        indexes,
        args.size,
        gpu,
        batch_size=args.batch_size,
        num_threads=args.threads,
        device_id=0 if gpu else None,
    )
    pipe.build()
    total = pipe.epoch_size("reader")  # samples in one epoch; the last batch wraps around
    labels: Counter[int] = Counter()
    seen = 0
    while seen < total:
        images, cls = pipe.run()
        images = images.as_cpu() if gpu else images
        batch = np.asarray(images.as_tensor())
        take = min(len(batch), total - seen)
        labels.update(int(bytes(np.asarray(cls[i])).decode("ascii")) for i in range(take))
        if seen == 0:
            print(f"first batch: images {batch.dtype} {batch.shape} on {'gpu' if gpu else 'cpu'}")
        seen += take
    print(f"read {seen} samples from {len(tars)} shards")
    print("samples per label: " + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())))


if __name__ == "__main__":
    main()
