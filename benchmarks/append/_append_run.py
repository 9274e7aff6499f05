"""Entry point of `append_bench`: one build, one append or a version's opens, in a fresh
process; prints one JSON object (seconds of the call, imports excluded).

    python -m benchmarks.append._append_run build LIST OUT --workers 2
    python -m benchmarks.append._append_run append DATASET LIST --workers 2 [--skip-duplicates]
    python -m benchmarks.append._append_run open DATASET --version 2 --repeat 21
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from fastpack.compiler import BuildOptions, append, build
from fastpack.formats import DatasetFiles
from fastpack.reader import Dataset


def _build(args: argparse.Namespace) -> dict[str, Any]:
    options = BuildOptions(workers=args.workers, progress=False)
    started = time.perf_counter()
    summary = build(args.source, args.target, options)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "samples": summary.samples, "shards": summary.shards}


def _append(args: argparse.Namespace) -> dict[str, Any]:
    options = BuildOptions(workers=args.workers, progress=False)
    started = time.perf_counter()
    summary = append(args.target, args.source, options, skip_duplicates=args.skip_duplicates)
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "skip_duplicates": args.skip_duplicates,
        "duplicates": summary.duplicates,
        "version": summary.version,
        "samples_added": summary.added.samples,
        "shards_added": summary.added.shards,
        "samples": summary.samples,
        "shards": summary.shards,
    }


def _open(args: argparse.Namespace) -> dict[str, Any]:
    """`DatasetFiles(root, version=k)` (manifest, index mapped and checked) and the map-style
    `Dataset(root, version=k)` opened (its first `len()`), `repeat` times each."""
    version = args.version or None
    files, reader = [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        opened = DatasetFiles(args.target, version=version)
        files.append(time.perf_counter() - started)
        samples = len(opened)
        started = time.perf_counter()
        dataset = Dataset(args.target, version=version)
        length = len(dataset)
        reader.append(time.perf_counter() - started)
        dataset.close()
        if length != samples:
            raise SystemExit(f"Dataset has {length} samples, DatasetFiles {samples}")
    return {
        "samples": samples,
        "dataset_files_ms": [round(s * 1000, 3) for s in files],
        "dataset_ms": [round(s * 1000, 3) for s in reader],
        "dataset_files_median_ms": round(statistics.median(files[1:] or files) * 1000, 3),
        "dataset_median_ms": round(statistics.median(reader[1:] or reader) * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("op", choices=("build", "append", "open"))
    parser.add_argument("target")
    parser.add_argument("source", nargs="?")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--version", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--skip-duplicates", action="store_true")
    args = parser.parse_args()
    if args.op == "build":  # `target` is the source list, `source` the output
        args.source, args.target = args.target, args.source
    run = {"build": _build, "append": _append, "open": _open}[args.op]
    print(json.dumps(run(args)))


if __name__ == "__main__":
    main()
