"""One reader process of `fields_bench`: several map-style loaders, their epochs interleaved.

    python -m benchmarks.fields._fields_run --variant NAME=PATH[:FIELD,FIELD...][:pad] ... \
        --epochs 4

Each variant is a `Dataset(PATH, transform=RandomResizedCrop(size), fields=(...), pad=...)`
(no `fields` argument when none are given, so that a checkout from before multi-field
samples runs it too) read through `make_loader` with persistent workers. Every variant is
warmed up with one epoch (epoch 0, its start-up timed), then each cycle runs one timed epoch of
every variant, in the given order in odd cycles and in reverse order in even ones, so that load
spikes of a shared machine fall on all of them. Prints one line `RESULT <json>`; which fastpack
sources were imported is in it (`fastpack_reader`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastpack.reader
import torch  # noqa: F401 -- side effect: loaded before any clock starts
from fastpack.reader import Dataset, RandomResizedCrop, make_loader

from benchmarks.parallel import cpu_seconds


@dataclass(frozen=True)
class Variant:
    name: str
    path: Path
    fields: tuple[str, ...]  # empty: the Dataset's default (image, label)
    pad: bool


def parse_variant(text: str) -> Variant:
    """`NAME=PATH[:FIELD,FIELD...][:pad]`."""
    name, _, rest = text.partition("=")
    path, *parts = rest.split(":")
    pad = bool(parts) and parts[-1] == "pad"
    if pad:
        parts = parts[:-1]
    fields = tuple(parts[0].split(",")) if parts and parts[0] else ()
    return Variant(name=name, path=Path(path), fields=fields, pad=pad)


def check_batch(batch: Sequence[Any], variant: Variant, batch_size: int, size: int) -> int:
    """Images in `batch`, after checking its shape: `(images, labels)`, or one value per field."""
    expected = len(variant.fields) or 2
    if len(batch) != expected:
        raise ValueError(f"{variant.name}: expected {expected} values per batch, got {len(batch)}")
    images = batch[0]
    shape = tuple(images.shape)
    if shape[1:] != (size, size, 3) or not 0 < shape[0] <= batch_size:
        raise ValueError(f"{variant.name}: expected (B, {size}, {size}, 3) images, got {shape}")
    if not str(images.dtype).endswith("uint8"):
        raise ValueError(f"{variant.name}: expected uint8 images, got {images.dtype}")
    for name, value in zip(variant.fields or ("jpg", "cls"), batch, strict=True):
        count = len(value.lengths) if hasattr(value, "lengths") else len(value)
        if count != shape[0]:
            raise ValueError(f"{variant.name}: {shape[0]} images but {count} values of {name}")
    for name, value in zip(variant.fields, batch, strict=False):  # no fields: (images, labels)
        if name.split(".")[0] == "txt" and not all(isinstance(t, str) for t in value):
            raise ValueError(f"{variant.name}: {name} values are not all str")
    return int(shape[0])


def _epoch(data: Iterable[Sequence[Any]], variant: Variant, args: argparse.Namespace) -> int:
    return sum(check_batch(b, variant, args.batch_size, args.size) for b in data)


def run(args: argparse.Namespace) -> dict[str, Any]:
    variants = [parse_variant(v) for v in args.variant]
    loaders = []
    results: dict[str, Any] = {}
    for v in variants:
        began = time.perf_counter()
        options: dict[str, Any] = {"fields": v.fields, "pad": v.pad} if v.fields else {}
        dataset = Dataset(v.path, transform=RandomResizedCrop(args.size), seed=0, **options)
        data = make_loader(dataset, batch_size=args.batch_size, num_workers=args.workers, seed=0)
        dataset.set_epoch(0)
        batches = iter(data)
        first = next(batches)
        startup = time.perf_counter() - began
        images = check_batch(first, v, args.batch_size, args.size)
        images += sum(check_batch(b, v, args.batch_size, args.size) for b in batches)
        warm = {"images": images, "seconds": time.perf_counter() - began}
        results[v.name] = {"startup_s": startup, "warmup": warm, "epochs": []}
        loaders.append((v, dataset, data))
    for cycle in range(1, args.epochs + 1):
        order = loaders if cycle % 2 else loaders[::-1]
        for v, dataset, data in order:
            dataset.set_epoch(cycle)
            t0, cpu0 = time.perf_counter(), cpu_seconds()
            images = _epoch(data, v, args)
            seconds, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
            epoch = {"cycle": cycle, "images": images, "seconds": seconds, "cpu_s": cpu}
            results[v.name]["epochs"].append(epoch)
    return {"fastpack_reader": str(Path(fastpack.reader.__file__).resolve()), "runs": results}


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(sys.argv[1:] if argv is None else argv)
    print("RESULT " + json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
