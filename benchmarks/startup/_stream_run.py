"""One cold start of `StreamingDataset` over S3, in a fresh process: prints `RESULT <json>`.

Run by `startup_stream_bench`. Every import is done before the clock starts; the cache directory
must be new (cold), or hold only a whole index where the dataset keeps it. Modes:

- `stream`: `StreamingDataset(url, ...)` to its first sample (`--workers 0`: iterated in this
  process) or first batch (`DataLoader(batch_size=64, num_workers=W)`, fork);
- `whole-index`: `Location.download` of the whole `index.fpx`, checked against the manifest's
  SHA-256 (what a `StreamingDataset` on an empty cache fetched before its first sample until
  the index came shard by shard).

Bytes are counted at the ranged GET (index and shards) and at the manifest's GET, and the time
spent in `IndexRows` (making it: header, table and offsets' ends; `ensure`: one shard's rows) is
summed, in this process and in the DataLoader workers it forks.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from fastpack.formats import INDEX_NAME, MANIFEST_NAME
from fastpack.reader import StreamingDataset
from fastpack.reader.remote import IndexRows, read_remote_manifest
from fastpack.storage import Expected, Location, RetryPolicy, download
from torch.utils.data import DataLoader

BATCH = 64
COUNTERS = ("index_bytes", "index_gets", "shard_bytes", "manifest_bytes", "ensures")
TIMERS = ("index_setup_s", "ensure_s")
_counts = {name: multiprocessing.Value("q", 0) for name in COUNTERS}
_counts.update({name: multiprocessing.Value("d", 0.0) for name in TIMERS})


def _add(name: str, value: float) -> None:
    counter = _counts[name]
    with counter.get_lock():
        counter.value += value


def count_fetches() -> None:
    """Wrap the index's ranged GET, the shards' ranged GET and the manifest's GET."""
    read_range: Callable[..., bytes] = Location.read_range
    read_bytes: Callable[..., bytes] = Location.read_bytes
    fetch_range: Callable[..., None] = download._fetch_range

    def counted_range(self: Location, name: str, start: int, end: int) -> bytes:
        data = read_range(self, name, start, end)
        if name == INDEX_NAME:
            _add("index_bytes", len(data))
            _add("index_gets", 1)
        return data

    def counted_bytes(self: Location, name: str, retry: RetryPolicy | None = None) -> bytes:
        data = read_bytes(self, name, retry)
        if name == MANIFEST_NAME:
            _add("manifest_bytes", len(data))
        return data

    def counted_fetch(target: Any, start: int, end: int, digest: Any) -> None:
        fetch_range(target, start, end, digest)
        _add(
            "index_bytes" if target.source.url.endswith(INDEX_NAME) else "shard_bytes", end - start
        )

    setup: Callable[..., None] = IndexRows.__init__
    ensure: Callable[[IndexRows, int], None] = IndexRows.ensure

    def timed_setup(self: IndexRows, *args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        setup(self, *args, **kwargs)
        _add("index_setup_s", time.perf_counter() - started)

    def timed_ensure(self: IndexRows, shard: int) -> None:
        started = time.perf_counter()
        ensure(self, shard)
        _add("ensure_s", time.perf_counter() - started)
        _add("ensures", 1)

    IndexRows.__init__ = timed_setup  # type: ignore[method-assign]
    IndexRows.ensure = timed_ensure  # type: ignore[method-assign]
    Location.read_range = counted_range  # type: ignore[method-assign]
    Location.read_bytes = counted_bytes  # type: ignore[method-assign]
    download._fetch_range = counted_fetch


def counts() -> dict[str, float]:
    return {name: counter.value for name, counter in _counts.items()}


def run_stream(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    dataset = StreamingDataset(
        args.url,
        cache_dir=args.cache,
        storage_options=options,
        shuffle_window=args.window,
        prefetch=args.prefetch,
    )
    t1 = time.perf_counter()
    constructed = counts()
    if args.workers:
        loader = DataLoader(
            dataset, batch_size=BATCH, num_workers=args.workers, multiprocessing_context="fork"
        )
        images, _ = next(iter(loader))
        first = int(images.shape[0])
    else:
        next(iter(dataset))
        first = 1
    t2 = time.perf_counter()
    return {
        "construct_s": t1 - t0,
        "first_s": t2 - t0,
        "samples": first,
        "at_construction": constructed,
        "at_first": counts(),
    }


def run_whole_index(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    location = Location(args.url, options)
    manifest = read_remote_manifest(args.url, options)
    index = manifest.index
    location.download(
        INDEX_NAME, args.cache / INDEX_NAME, Expected(size=index.bytes, sha256=index.sha256)
    )
    return {"first_s": time.perf_counter() - t0, "at_first": counts()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("stream", "whole-index"))
    parser.add_argument("--url", required=True)
    parser.add_argument("--options", required=True, help="storage options, JSON")
    parser.add_argument("--cache", type=Path, required=True, help="a new directory")
    parser.add_argument("--window", type=int, default=4)
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    options = json.loads(args.options)
    torch.set_num_threads(1)
    count_fetches()
    result = (run_stream if args.mode == "stream" else run_whole_index)(args, options)
    print("RESULT " + json.dumps(result), flush=True)
    sys.stderr.flush()
    os._exit(0)  # prefetches in flight are not part of the measurement


if __name__ == "__main__":
    main()
