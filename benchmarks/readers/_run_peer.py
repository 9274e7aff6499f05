"""One peer in a fresh process: `convert` (timed) or `load` (start-up and epochs timed).

Prints one line `RESULT <json>` on success. Run by `reader_bench`; usable by hand:
`python -m benchmarks.readers._run_peer load --peer wds-pil \
    --workdir /tmp/fastpack-bench/webdataset`
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch  # noqa: F401 -- side effect: loaded before any clock starts

from benchmarks.parallel import cpu_seconds
from benchmarks.readers.peers import Batch, load_peer

SIZE = 224


def _as_numpy(value: Any) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


_BATCH_DIMS = 4  # a batch is N x H x W x C


def check_batch(batch: Batch, batch_size: int) -> int:
    """Number of images in `batch`, after checking it is (B, 224, 224, 3) uint8 with B labels."""
    images, labels = batch
    shape = tuple(images.shape)
    if len(shape) != _BATCH_DIMS or shape[1:] != (SIZE, SIZE, 3) or not 0 < shape[0] <= batch_size:
        raise ValueError(f"expected a (B<={batch_size}, {SIZE}, {SIZE}, 3) batch, got {shape}")
    if not str(images.dtype).endswith("uint8"):
        raise ValueError(f"expected uint8 images, got {images.dtype}")
    if len(labels) != shape[0]:
        raise ValueError(f"{shape[0]} images but {len(labels)} labels")
    return int(shape[0])


def save_preview(batch: Batch, path: Path) -> None:
    """The first 8 images of a batch side by side, for a look at what the peer produced."""
    import cv2  # noqa: PLC0415 -- on use

    images = _as_numpy(batch[0])[:8]
    cv2.imwrite(str(path), np.concatenate(list(images), axis=1)[:, :, ::-1])


def run_convert(args: argparse.Namespace) -> dict[str, Any]:
    peer = load_peer(args.peer)
    args.workdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    peer.convert(args.corpus, args.workdir, args.workers)
    seconds = time.perf_counter() - start
    size = sum(p.stat().st_size for p in args.workdir.rglob("*") if p.is_file())
    return {"seconds": seconds, "bytes": size}


def run_load(args: argparse.Namespace) -> dict[str, Any]:
    peer = load_peer(args.peer)  # library imports happen here, before the start-up clock
    start = time.perf_counter()
    epochs = peer.loader(args.workdir, args.batch_size, args.workers, args.seed)
    warmup = iter(epochs.epoch(0))
    first = next(warmup)
    startup = time.perf_counter() - start
    save_preview(first, args.workdir / f"preview-{args.peer}.png")
    warmup_images = check_batch(first, args.batch_size)
    del first  # a batch held pins its memory (a loader's slot) for every later epoch
    warmup_images += sum(check_batch(b, args.batch_size) for b in warmup)
    warmup_seconds = time.perf_counter() - start
    timed = []
    for e in range(1, args.epochs + 1):
        t0, cpu0 = time.perf_counter(), cpu_seconds()
        images = sum(check_batch(b, args.batch_size) for b in epochs.epoch(e))
        seconds, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        timed.append({"images": images, "seconds": seconds, "cpu_s": cpu})
    return {
        "startup_s": startup,
        "warmup": {"images": warmup_images, "seconds": warmup_seconds},
        "epochs": timed,
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("action", choices=["convert", "load"])
    parser.add_argument("--peer", required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(sys.argv[1:] if argv is None else argv)
    result = run_convert(args) if args.action == "convert" else run_load(args)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
