"""Where a build's time goes on a Dask cluster, and what N machines would give.

For one source and one set of build options, runs the same build `--rounds` times each way:
local processes (`--workers 2`) and a local Dask cluster (a scheduler and 2 one-thread workers
started with the `dask` command), taking turns round by round. Each Dask build is watched with
Dask's own task stream (`distributed.get_task_stream`), which gives every shard task's start and
stop: the time before the first task starts (planning, on the client), the tasks, and the time
after the last task ends (index and manifest, on the client). Then the makespan on N machines of
C one-thread workers each is estimated as

    plan + max(longest task, sum of task times / (N x C)) + finish

which holds while the source and the output keep up (the shared file system or object store is
the limit beyond that). Writes JSON (`--out`) and prints a table. Run from the repository root:

    bash ../shared/tools/make_photo_corpus.sh /tmp/photo-corpus-3000 3000
    python -m benchmarks.builds.build_scaling --source /tmp/photo-corpus-3000/train --max-side 256
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastpack.compiler import BuildOptions, build

from benchmarks.builds._scale_dask import DaskCluster
from benchmarks.sysinfo import fastpack_commit, load, machine, versions

REPO = Path(__file__).resolve().parent.parent


def _options(args: argparse.Namespace, workers: int | None) -> BuildOptions:
    return BuildOptions(
        workers=workers, shard_size=args.shard_size, max_side=args.max_side, progress=False
    )


def _local(args: argparse.Namespace, out: Path) -> float:
    started = time.perf_counter()
    build(args.source, out, _options(args, 2))
    return time.perf_counter() - started


def _dask(args: argparse.Namespace, out: Path, address: str) -> dict[str, Any]:
    from distributed import Client, get_task_stream  # noqa: PLC0415 -- optional: distributed

    with Client(address) as client:  # type: ignore[no-untyped-call]
        started_wall = time.time()
        started = time.perf_counter()
        with get_task_stream(client) as stream:
            build(args.source, out, _options(args, None), cluster=client)
        seconds = time.perf_counter() - started
        ended_wall = time.time()
    spans = [
        (part["start"], part["stop"])
        for task in stream.data
        if str(task["key"]).startswith("fastpack-shard")
        for part in task["startstops"]
        if part["action"] == "compute"
    ]
    durations = [stop - start for start, stop in spans]
    return {
        "seconds": seconds,
        "tasks": len(durations),
        "task_seconds": durations,
        "plan_seconds": min(start for start, _ in spans) - started_wall,
        "finish_seconds": ended_wall - max(stop for _, stop in spans),
    }


def _estimate(run: dict[str, Any], machines: int, workers: int) -> float:
    tasks = run["task_seconds"]
    middle = max(*tasks, sum(tasks) / (machines * workers))
    return float(run["plan_seconds"] + middle + run["finish_seconds"])


def _median_range(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--max-side", type=int, default=None)
    parser.add_argument("--shard-size", type=int, default=32 * 2**20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "build_scaling.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fastpack-scaling-"))
    local_runs: list[float] = []
    dask_runs: list[dict[str, Any]] = []
    dask = str(Path(sys.executable).parent / "dask")
    with DaskCluster(dask, 2, work / "dask") as cluster:
        for round_ in range(args.rounds):
            for way in ("local", "dask"):
                out = work / f"{way}-{round_}"
                if way == "local":
                    local_runs.append(_local(args, out))
                else:
                    dask_runs.append(_dask(args, out, cluster.address))
                shutil.rmtree(out)
                print(f"round {round_} {way}: done", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    last = dask_runs[-1]
    per_task = [t for run in dask_runs for t in run["task_seconds"]]
    estimates = {
        f"{machines}x{workers}": _estimate(last, machines, workers)
        for machines in (1, 2, 4, 8, 16, 32)
        for workers in (16,)
    }
    result = {
        "machine": machine(),
        "load": load(),
        "versions": versions(),
        "commit": fastpack_commit(REPO),
        "source": args.source,
        "max_side": args.max_side,
        "shard_size": args.shard_size,
        "local_workers_2_seconds": _median_range(local_runs),
        "dask_2_workers_seconds": _median_range([r["seconds"] for r in dask_runs]),
        "dask_over_local": statistics.median(r["seconds"] for r in dask_runs)
        / statistics.median(local_runs),
        "tasks": last["tasks"],
        "task_seconds": _median_range(per_task),
        "plan_seconds": _median_range([r["plan_seconds"] for r in dask_runs]),
        "finish_seconds": _median_range([r["finish_seconds"] for r in dask_runs]),
        "estimated_seconds_machines_x_workers": estimates,
        "runs": {"local": local_runs, "dask": dask_runs},
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
