"""Which S3 client fetches with the least CPU: s3fs (aiohttp), obstore (Rust object_store) and
pyarrow (AWS SDK C++), each reading the same objects in ranged GETs of 8 MiB over 4 threads, the
CPU of this process (all its threads) per MiB received. Against a local SeaweedFS, straight and
through the shaping proxy (its own process; 30 ms before the first byte, 50 MB/s a connection).
Only the bytes arriving in memory are counted: no file is written, nothing is hashed.

    python -m benchmarks.streaming.s3_clients_bench --out s3_clients.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.streaming._proxy_process import ProxyProcess
from benchmarks.sysinfo import fastpack_commit, machine, versions

Fetch = Callable[[str, int, int], Any]  # key, start, end -> a buffer
PART = 8 << 20


def clients(bucket: str, options: dict[str, Any]) -> dict[str, Fetch]:
    """A ranged read of `bucket/key` through each client, made for `options` (s3fs's)."""
    import obstore  # noqa: PLC0415 -- optional: obstore
    import pyarrow.fs  # noqa: PLC0415 -- optional: pyarrow
    import s3fs  # noqa: PLC0415 -- optional: s3fs
    from obstore.store import S3Store  # noqa: PLC0415 -- optional: obstore

    endpoint = options["client_kwargs"]["endpoint_url"]
    s3 = s3fs.S3FileSystem(**options)
    store = S3Store(
        bucket,
        endpoint=endpoint,
        access_key_id=options["key"],
        secret_access_key=options["secret"],
        region="us-east-1",
        client_options={"allow_http": True},
    )
    arrow = pyarrow.fs.S3FileSystem(
        access_key=options["key"],
        secret_key=options["secret"],
        endpoint_override=urlsplit(endpoint).netloc,
        scheme="http",
        region="us-east-1",
    )
    return {
        "s3fs cat_file": lambda key, a, b: s3.cat_file(f"{bucket}/{key}", start=a, end=b),
        "obstore get_range": lambda key, a, b: obstore.get_range(store, key, start=a, end=b),
        "pyarrow read_at": lambda key, a, b: arrow.open_input_file(f"{bucket}/{key}").read_at(
            b - a, a
        ),
    }


def measure(fetch: Fetch, keys: list[str], size: int) -> dict[str, float]:
    spans = [(key, a, min(a + PART, size)) for key in keys for a in range(0, size, PART)]
    fetch(*spans[0])  # connections and credentials, not counted
    before, wall = os.times(), time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        received = sum(len(memoryview(r)) for r in pool.map(lambda s: fetch(*s), spans))
    after, wall = os.times(), time.perf_counter() - wall
    mib = received / 2**20
    cpu = (after.user - before.user) + (after.system - before.system)
    return {
        "cpu_ms_per_mib": cpu * 1000 / mib,
        "user_ms_per_mib": (after.user - before.user) * 1000 / mib,
        "mib_per_s": mib / wall,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.s3_server import S3Server  # noqa: PLC0415 -- checkout
    from tests.shaping_proxy import via  # noqa: PLC0415 -- checkout

    server = S3Server(Path(tempfile.mkdtemp(prefix="seaweedfs-")))
    server.start()
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        bucket = server.new_bucket()
        fs = server.filesystem()
        keys = [f"objects/{i:03d}" for i in range(args.objects)]
        for key in keys:
            fs.pipe(f"{bucket}/{key}", os.urandom(args.object_mib << 20))
        for shaped in (False, True):
            with ProxyProcess(server.endpoint, 50e6 if shaped else None) as proxy:
                proxy.set_delay(0.03 if shaped else 0.0)
                made = clients(bucket, via(server.storage_options, proxy.endpoint))
                label = "shaped (30 ms, 50 MB/s a connection)" if shaped else "straight"
                rows = results.setdefault(label, {name: [] for name in made})
                for _ in range(args.rounds):  # the clients take turns, round by round
                    for name, fetch in made.items():
                        rows[name].append(measure(fetch, keys, args.object_mib << 20))
                        print(label, name, rows[name][-1], file=sys.stderr)
    finally:
        server.stop()
    return {
        "machine": machine(),
        "versions": versions(),
        "commit": fastpack_commit(Path.cwd()),
        "objects": args.objects,
        "object_mib": args.object_mib,
        "part_bytes": PART,
        "threads": 4,
        "results": results,
    }


def table(report: dict[str, Any]) -> str:
    lines = [
        "| setting | client | CPU ms per MiB, median (range) | of it user | MiB/s median |",
        "|---|---|---|---:|---:|",
    ]
    for label, rows in report["results"].items():
        for name, rounds in rows.items():
            cpu = [r["cpu_ms_per_mib"] for r in rounds]
            user = statistics.median(r["user_ms_per_mib"] for r in rounds)
            rate = statistics.median(r["mib_per_s"] for r in rounds)
            lines.append(
                f"| {label} | {name} | {statistics.median(cpu):.2f} ({min(cpu):.2f}-"
                f"{max(cpu):.2f}) | {user:.2f} | {rate:.0f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--objects", type=int, default=8)
    p.add_argument("--object-mib", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    report = run(args)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1))
    print(table(report))


if __name__ == "__main__":
    main()
