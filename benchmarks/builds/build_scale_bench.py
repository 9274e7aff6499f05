"""Build memory and speed from 10 thousand to 10 million images.

    python -m benchmarks.builds.build_scale_bench --sizes 10000,1000000,10000000 --workers 2
    python -m benchmarks.builds.build_scale_bench --sizes 10000,1000000 --dask-workers 2 --runs 3

Makes `--images` distinct tiny JPEGs and, per size N, a `path,label` CSV of N lines repeating
them (`_build_scale_corpus.py`, kept in `--workdir`). Each run builds the list with `fastpack
build LIST OUT --no-progress` and `--workers W`, or, with `--dask-workers K`, `--scheduler` on a
fresh local Dask cluster of K single-threaded workers (`_build_scale_dask.py`). Every process of
the build (and of the cluster) is sampled every `--interval` s for VmRSS and RssAnon
(`_build_scale_mem.py`); the output is measured, then deleted. A run whose output might not fit
the free disk space (with `--reserve-gib` to spare) is refused. Results are merged into `--out`
(a run of the same mode, workers, shard size, N and number replaces the earlier one); each run's
`date` and `commit` are taken when it finishes. `python -m benchmarks.builds.scale_report` prints
the tables of `BUILD.md` from them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import sysinfo as _sysinfo
from benchmarks.builds._scale_corpus import Corpus, make_corpus, write_list
from benchmarks.builds._scale_dask import DaskCluster
from benchmarks.builds._scale_run import build_command, measure_build, output_bytes

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ("fastpack", "numpy", "simplejpeg", "opencv-python-headless", "dask", "distributed")
# Disk a sample may take at most: a 1 KiB image member and a 1 KiB class member in the tar, and
# generously the plan, index parts, index and DALI index around them.
BYTES_PER_SAMPLE = 2048 + 512
GIB = 1 << 30


def _commit() -> str:
    """HEAD, and whether any tracked file differs from it."""
    return _sysinfo.fastpack_commit(REPO)


def has_scheduler_flag() -> bool:
    """Whether this fastpack's `build` takes `--scheduler`."""
    command = [sys.executable, "-m", "fastpack", "build", "--help"]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    return "--scheduler" in done.stdout


def check_disk(workdir: Path, n: int, reserve_gib: float) -> float:
    """Free GiB in `workdir`; SystemExit when a build of `n` samples might not fit."""
    free = shutil.disk_usage(workdir).free
    needed = n * BYTES_PER_SAMPLE + reserve_gib * GIB
    if free < needed:
        raise SystemExit(
            f"{workdir}: {free / GIB:.1f} GiB free, a build of {n:,} samples may need "
            f"{needed / GIB:.1f} GiB (with {reserve_gib} GiB to spare); refusing to start"
        )
    return free / GIB


def one_run(args: argparse.Namespace, n: int, run: int, source: Path) -> dict[str, Any]:
    mode = "dask" if args.dask_workers else "local"
    workers = args.dask_workers or args.workers
    shards = f"-s{args.shard_size}" if args.shard_size else ""
    name = f"{mode}-w{workers}{shards}-{n}-r{run}"
    out = args.workdir / f"out-{name}"
    shutil.rmtree(out, ignore_errors=True)
    free_gib = check_disk(args.workdir, n, args.reserve_gib)
    logs = args.workdir / "logs"
    logs.mkdir(exist_ok=True)
    load = _sysinfo.load()
    try:
        if mode == "dask":
            with DaskCluster(args.dask, workers, args.workdir / f"cluster-{name}") as cluster:
                command = build_command(
                    source,
                    out,
                    workers=workers,
                    scheduler=cluster.address,
                    shard_size=args.shard_size,
                )
                measured = measure_build(
                    command,
                    root_role="client",
                    others=cluster.roots(),
                    interval=args.interval,
                    log=logs / f"{name}.log",
                    timeout=args.timeout,
                )
        else:
            command = build_command(
                source, out, workers=workers, scheduler=None, shard_size=args.shard_size
            )
            measured = measure_build(
                command,
                root_role="build",
                others={},
                interval=args.interval,
                log=logs / f"{name}.log",
                timeout=args.timeout,
            )
        sizes = output_bytes(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    rate = n / measured["wall_s"]
    rss, anon = measured["largest_peak_rss"], measured["largest_peak_anon"]
    print(
        f"{name}: {measured['wall_s']:.1f} s, {rate:,.0f} images/s, largest peak RSS "
        f"{rss['mib']} MiB ({rss['role']}), anon {anon['mib']} MiB ({anon['role']})",
        flush=True,
    )
    return {
        "mode": mode,
        "workers": workers,
        "shard_size": args.shard_size,
        "n": n,
        "run": run,
        "commit": _commit(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "load_before": load,
        "free_gib_before": round(free_gib, 1),
        "images_per_s": round(rate, 1),
        "output_bytes": sizes["total"],
        "output_files": sizes["files"],
        "output_parts": sizes,
        **measured,
    }


def _key(run: dict[str, Any]) -> tuple[Any, ...]:
    return run["mode"], run["workers"], run.get("shard_size") or "", run["n"], run["run"]


def save(path: Path, corpus: Corpus, runs: list[dict[str, Any]]) -> None:
    """Merge `runs` into the results at `path` (a run with the same key is replaced)."""
    old = json.loads(path.read_text()) if path.exists() else {}
    merged = {_key(r): r for r in old.get("runs", [])}
    merged.update({_key(r): r for r in runs})
    results = {
        "machine": _sysinfo.machine(),
        "versions": _sysinfo.versions(DISTRIBUTIONS),
        "commit": _commit(),
        "corpus": asdict(corpus),
        "bytes_per_sample_check": BYTES_PER_SAMPLE,
        "runs": sorted(merged.values(), key=_key),
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=1) + "\n")
    os.replace(tmp, path)


def _sizes(text: str) -> list[int]:
    return [int(s.replace("_", "")) for s in text.split(",") if s]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=_sizes, default=_sizes("10000,1000000,10000000"))
    parser.add_argument("--workers", type=int, default=2, help="build processes (local mode)")
    parser.add_argument(
        "--dask-workers",
        type=int,
        default=0,
        help="build through a local Dask cluster of this many workers",
    )
    parser.add_argument(
        "--dask", default=str(Path(sys.executable).with_name("dask")), help="the dask command line"
    )
    parser.add_argument("--shard-size", default=None, help="passed to fastpack build")
    parser.add_argument("--runs", type=int, default=1, help="runs per size")
    parser.add_argument("--images", type=int, default=4096, help="distinct JPEGs")
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--reserve-gib", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per build")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-build-scale"))
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks/builds/build_scale_results.json"
    )
    args = parser.parse_args()
    if args.dask_workers and not has_scheduler_flag():
        raise SystemExit("this fastpack's build has no --scheduler option: no Dask mode")
    args.workdir.mkdir(parents=True, exist_ok=True)
    corpus = make_corpus(args.workdir, args.images, args.classes)
    print(f"corpus: {corpus}", flush=True)
    for n in args.sizes:
        source = write_list(args.workdir / f"list-{n}.csv", n, corpus)
        for run in range(args.runs):
            save(args.out, corpus, [one_run(args, n, run, source)])


if __name__ == "__main__":
    main()
