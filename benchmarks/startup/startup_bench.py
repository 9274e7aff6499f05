"""Start-up and worker memory of fastpack's map-style reader at 10 thousand to 10 million samples.

    python -m benchmarks.startup.startup_bench --source /tmp/photo-corpus/train

Builds a small real dataset from `--source` and, from it, synthetic datasets of each `--sizes`
(`benchmarks/startup/_index.py`; cached under `--workdir`). Then, each in a fresh process
(`benchmarks/startup/_run.py`), page cache warm:

- `startup`: `Dataset(path, transform=RandomResizedCrop(224))` + `make_loader(ds, batch_size=64,
  num_workers=2)` to the first batch, `--runs` times per size, sizes interleaved;
- `costs`: the pieces of that path one by one;
- `memory`: private memory of each worker and of the trainer after `--batches` batches, at the
  smallest and the largest size (two workers `--memory-runs` times, one worker once).

`--parts peers` (run with the peers' environment, see `_startup_peers.py`) times the start-up of
webdataset and of an ImageFolder-style dataset at `--peer-samples`. Raw numbers go to
`WORKDIR/results.json`, where each part replaces its earlier numbers; `--out` is rendered from all
of them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import fastpack.formats

from benchmarks import sysinfo as _sysinfo
from benchmarks.launch import run_step
from benchmarks.startup._index import build_base, synthetic_dataset
from benchmarks.startup._report import render

PARTS = ("startup", "costs", "memory", "peers")
DEFAULT_PARTS = ("startup", "costs", "memory")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/photo-corpus/train"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-startup"))
    parser.add_argument(
        "--sizes", default="10000,1000000,10000000", help="samples, comma-separated"
    )
    parser.add_argument("--parts", default=",".join(DEFAULT_PARTS), help=f"any of {PARTS}")
    parser.add_argument("--runs", type=int, default=5, help="start-up runs per size")
    parser.add_argument("--memory-runs", type=int, default=3, help="two-worker memory runs")
    parser.add_argument("--batches", default="20,60,120", help="memory measured after these")
    parser.add_argument("--peer-samples", type=int, default=1_000_000)
    parser.add_argument("--timeout", type=float, default=300, help="seconds per step")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/startup/STARTUP.md"))
    args = parser.parse_args(argv)
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown parts {unknown}; parts are {', '.join(PARTS)}")
    return args


def warm(dataset: Path) -> None:
    """Read the manifest, the index and every distinct shard file once (page cache warm)."""
    seen: set[Path] = set()
    for path in [dataset / "fastpack.json", dataset / "index.fpx", *dataset.glob("shards/*")]:
        target = path.resolve()
        if target in seen:
            continue
        seen.add(target)
        with target.open("rb") as f:
            while f.read(8 << 20):
                pass


def step(args: argparse.Namespace, module: str, step_args: list[str], name: str) -> Any:
    """Run one measurement in a fresh process; its RESULT, or a SystemExit naming the log."""
    log = args.workdir / "logs" / f"{name}.log"
    outcome = run_step(module, step_args, log, args.timeout, memory=False)
    if outcome.result is None:
        raise SystemExit(f"{module} {' '.join(step_args)} failed: {outcome.error} (log: {log})")
    return outcome.result


def datasets(args: argparse.Namespace) -> dict[int, Path]:
    base = build_base(args.source, args.workdir / "base")
    return {n: synthetic_dataset(base, args.workdir / f"n{n}", n) for n in args.sizes}


def measure_startup(args: argparse.Namespace, paths: dict[int, Path]) -> dict[str, Any]:
    runs: dict[str, list[Any]] = {str(n): [] for n in paths}
    for r in range(args.runs):  # sizes interleaved: a slow spell of the machine hits them all
        for n, path in paths.items():
            warm(path)
            result = step(args, "startup._run", ["startup", "--dataset", str(path)], f"s{n}-{r}")
            runs[str(n)].append(result)
            print(f"start-up {n:>10,}: {result['startup_s']:.3f} s", flush=True)
    return runs


def measure_costs(args: argparse.Namespace, paths: dict[int, Path]) -> dict[str, Any]:
    costs = {}
    for n, path in paths.items():
        warm(path)
        costs[str(n)] = step(args, "startup._run", ["costs", "--dataset", str(path)], f"c{n}")
        print(f"costs {n:>10,}: done", flush=True)
    return costs


def measure_memory(args: argparse.Namespace, paths: dict[int, Path]) -> dict[str, Any]:
    sizes = [min(paths), max(paths)]
    plan = [(2, r) for r in range(args.memory_runs)] + [(1, 0)]
    memory: dict[str, dict[str, list[Any]]] = {"2": {}, "1": {}}
    for workers, r in plan:
        for n in sizes:
            warm(paths[n])
            result = step(
                args,
                "startup._run",
                [
                    "memory",
                    "--dataset",
                    str(paths[n]),
                    "--batches",
                    args.batches,
                    "--workers",
                    str(workers),
                ],
                f"m{n}-w{workers}-{r}",
            )
            memory[str(workers)].setdefault(str(n), []).append(result)
            print(f"memory {n:>10,} ({workers} workers): done", flush=True)
    return memory


def measure_peers(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.startup.peer_startup import measure  # noqa: PLC0415 -- optional: the peers' packages

    return measure(args, step)


def describe(args: argparse.Namespace, paths: dict[int, Path]) -> dict[str, Any]:
    shards = {}
    for n, path in paths.items():
        manifest = json.loads((path / "fastpack.json").read_text())
        shards[str(n)] = {
            "shards": len(manifest["shards"]),
            "index_bytes": (path / "index.fpx").stat().st_size,
            "manifest_bytes": (path / "fastpack.json").stat().st_size,
            "base_samples": manifest["build"]["synthetic"]["base_samples"],
        }
    return shards


def code_version() -> str:
    """The commit of the fastpack sources this process imports, and whether any tracked file of
    that checkout differs from it (a checkout other than this one may be on the path)."""

    repo = Path(fastpack.formats.__file__).resolve().parents[1]

    def git(*args: str) -> str:
        command = ("git", "-C", str(repo), *args)
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "?"

    changed = git("status", "--porcelain", "--untracked-files=no")  # every tracked file
    state = "tracked files modified" if changed else "no tracked file modified"
    return f"{git('rev-parse', '--short', 'HEAD')} ({state}; imported from {repo})"


def meta(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": "python -m benchmarks.startup.startup_bench " + " ".join(argv),
        "python": sys.executable,
        "machine": _sysinfo.machine(),
        "versions": {k: v for k, v in _sysinfo.versions().items() if v != "not installed"},
        "fastpack_commit": code_version(),
        "load_before": _sysinfo.load(),
    }


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    results_path = args.workdir / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    paths = datasets(args) if set(args.parts) - {"peers"} else {}
    measures = {"startup": measure_startup, "costs": measure_costs, "memory": measure_memory}
    for part in args.parts:
        info = meta(args, argv)
        data = measure_peers(args) if part == "peers" else measures[part](args, paths)
        info["load_after"] = _sysinfo.load()
        results[part] = {"meta": info, "data": data}
        if part != "peers":
            results["datasets"] = describe(args, paths)
        results_path.write_text(json.dumps(results, indent=1))
    args.out.write_text(render(results))
    print(f"wrote {args.out} and {results_path}")


if __name__ == "__main__":
    main()
