"""Two installs of fastpack side by side on one machine, in one run: local epochs of
`StreamingDataset` (and of the map-style `Dataset`, the reference) through `make_loader`.

Each install is a directory made by `pip install --target DIR fastpack-*.whl` (A: the code
before a change, B: after). Every epoch is a fresh process (start-up included) of one install;
the installs take turns epoch by epoch and round by round, so that they share the machine's
drift. Ratios B/A are taken within a round. The dataset is built once, by install A.

With `--s3` the dataset is also published to a local SeaweedFS S3 server (`tests.s3_server`)
behind the shaping proxy of `stream_bench` (`--delay-ms` before each response's first byte,
`--rate-mbs` per connection), and a third row reads it from there into an empty cache each epoch.

    python -m benchmarks.streaming.install_ab --a /tmp/site-a --b /tmp/site-b \
        --source /tmp/photo-corpus-800/train --repeat 30 --workers 8 16 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.streaming.stream_bench import publish, repeated_source
from benchmarks.sysinfo import fastpack_commit, load, machine, versions

CHILD = Path(__file__).with_name("_epoch_child.py")
KINDS = ("map", "streaming")
URL_KIND = "url"


def in_install(site: Path, args: list[str], storage: str = "{}") -> dict[str, Any]:
    """Runs `args` as a Python script with `site` first on the path; its last stdout line,
    parsed as JSON."""
    env = {**os.environ, "PYTHONPATH": str(site), "FASTPACK_AB_STORAGE": storage}
    done = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} under {site} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def build(site: Path, source: Path, out: Path, workers: int, shard_mib: int) -> None:
    if (out / "fastpack.json").exists():
        return
    code = (
        "import json, sys; from fastpack.compiler import BuildOptions, build; "
        f"build({str(source)!r}, {str(out)!r}, BuildOptions(workers={workers}, progress=False, "
        f"shard_size={shard_mib} * 2**20)); print(json.dumps({{}}))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd="/")


def run(args: argparse.Namespace) -> dict[str, Any]:
    source = repeated_source(args.source, args.repeat, args.work)
    dataset = args.work / f"ds-{source.parent.name}-{args.shard_mib}m"
    build(args.a, source, dataset, args.build_workers, args.shard_mib)
    if not args.s3:
        return rounds(args, dataset, None)
    from benchmarks.streaming._proxy_process import ProxyProcess  # noqa: PLC0415 -- optional: s3
    from tests.s3_server import S3Server  # noqa: PLC0415 -- checkout
    from tests.shaping_proxy import via  # noqa: PLC0415 -- checkout

    root = Path(tempfile.mkdtemp(prefix="seaweedfs-", dir=args.work))
    server = S3Server(root)
    server.start()
    try:
        url = publish(dataset, server)
        with ProxyProcess(server.endpoint, args.rate_mbs * 1e6) as proxy:
            proxy.set_delay(args.delay_ms / 1000)
            storage = json.dumps(via(server.storage_options, proxy.endpoint))
            return rounds(args, dataset, (url, storage))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def rounds(args: argparse.Namespace, dataset: Path, s3: tuple[str, str] | None) -> dict[str, Any]:
    """Every round: each worker count, kind and install in turn."""
    installs = {"A": args.a, "B": args.b}
    kinds = (*KINDS, URL_KIND) if s3 else KINDS
    caches = Path(tempfile.mkdtemp(prefix="caches-", dir=args.work))
    rows: dict[str, list[dict[str, Any]]] = {}
    for site in installs.values():  # warm-up, not counted: page cache, imports
        in_install(site, [str(CHILD), str(dataset), "streaming", str(args.workers[0]), "0"])
    loads = [load()]
    for round_ in range(args.rounds):
        for workers in args.workers:
            order = ("A", "B") if round_ % 2 == 0 else ("B", "A")
            for kind in kinds:
                for name in order:
                    argv = [str(CHILD), str(dataset), kind, str(workers), str(round_ + 1)]
                    storage = "{}"
                    if kind == URL_KIND and s3 is not None:
                        argv[1], storage = s3
                        argv.append(str(caches / f"{name}-{round_}-{workers}"))
                    result = in_install(installs[name], argv, storage)
                    key = f"{name} {kind} w{workers}"
                    rows.setdefault(key, []).append({"round": round_, **result})
                    print(f"round {round_} {key}: {result['rate']:.0f} img/s", file=sys.stderr)
        loads.append(load())
    return {
        "machine": machine(),
        "versions": versions(),
        "commit": fastpack_commit(Path.cwd()),
        "installs": {name: str(site) for name, site in installs.items()},
        "notes": args.notes,
        "dataset": str(dataset),
        "repeat": args.repeat,
        "workers": args.workers,
        "loads": loads,
        "shaping": {"delay_ms": args.delay_ms, "rate_mb_per_s_per_connection": args.rate_mbs}
        if s3
        else None,
        "rows": rows,
        "summary": summary(rows, args.workers, kinds),
    }


def summary(
    rows: dict[str, list[dict[str, Any]]], workers: Sequence[int], kinds: Sequence[str]
) -> dict[str, Any]:
    """Per worker count and kind: median img/s of A and B (with ranges), and B/A per round."""
    out: dict[str, Any] = {}
    for w in workers:
        for kind in kinds:
            a = [r["rate"] for r in rows[f"A {kind} w{w}"]]
            b = [r["rate"] for r in rows[f"B {kind} w{w}"]]
            ratios = [y / x for x, y in zip(a, b, strict=True)]
            out[f"{kind} w{w}"] = {
                "A_median": statistics.median(a),
                "A_range": [min(a), max(a)],
                "B_median": statistics.median(b),
                "B_range": [min(b), max(b)],
                "B_over_A": ratios,
                "B_over_A_median": statistics.median(ratios),
            }
    return out


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--a", type=Path, required=True, help="install before the change")
    p.add_argument("--b", type=Path, required=True, help="install after the change")
    p.add_argument("--source", type=Path, default=Path("/tmp/photo-corpus-800/train"))
    p.add_argument("--work", type=Path, default=Path("/tmp/fastpack-install-ab"))
    p.add_argument("--repeat", type=int, default=1, help="link each photo this many times")
    p.add_argument("--shard-mib", type=int, default=8)
    p.add_argument("--build-workers", type=int, default=2)
    p.add_argument("--workers", type=int, nargs="+", default=[2])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--s3", action="store_true", help="also read the dataset from a local S3")
    p.add_argument("--delay-ms", type=float, default=30.0, help="first-byte delay (with --s3)")
    p.add_argument("--rate-mbs", type=float, default=50.0, help="MB/s per connection (with --s3)")
    p.add_argument("--notes", default="", help="what A and B are (commits)")
    p.add_argument("--out", type=Path, default=None, help="JSON report")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    report = run(args)
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps(report["summary"], indent=2))


if __name__ == "__main__":
    main()
