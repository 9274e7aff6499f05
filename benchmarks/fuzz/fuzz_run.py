"""The long run of the fuzz suite (tests/fuzz): the same targets, mutators, harness and seed as
the tests, at 100,000 cases and more, over `--workers` child processes.

    python -m benchmarks.fuzz.fuzz_run --cases 100000 --workers 16

Each case runs in a long-lived worker process (`tests.fuzz.harness`): its outcome is pixels (or
a parsed file, an accepted state), a named error, or a failure: a signal, a hang (no answer
within `--timeout`), peak resident memory over the budget (`harness.memory_budget_kib`: what a
decode within the default pixel budget takes, plus slack), a traceback (an exception that is not
the target's named error), or a wrong answer (`tests.fuzz.targets`). The raw JSON holds the
seed, the cases and outcomes of every target, its errors by type, its slowest case and peak
memory, every failure grouped by kind with the command that reproduces its first case, and the
machine, versions, commit and date; the page (`FUZZ.md`) is rendered from one or more such
files (`--render`).

| flag | default | meaning |
| --- | --- | --- |
| `--cases N` | 100000 | cases in all, shared out by the weights of tests/fuzz/plan.py |
| `--workers N` | the CPU count | worker processes (one thread each drives one) |
| `--seed N` | tests/fuzz/plan.py's `SEED` | the seed: case k of a target is the same at any scale |
| `--targets a,b` | all | targets to run (tests/fuzz/targets.py) |
| `--timeout S` | 20 | seconds before a case counts as a hang |
| `--memory-mib N` | the harness's budget | peak resident memory one case may add |
| `--label TEXT` | `current tree` | what the run measured (e.g. an older commit) |
| `--commit TEXT` | from git | the commit, where the sources are an exported tree, not a checkout |
| `--workdir DIR` | a temporary folder | templates and the workers' folders |
| `--out-json FILE` | `benchmarks/fuzz/fuzz_results.json` | the raw numbers |
| `--out-md FILE` | `benchmarks/fuzz/FUZZ.md` | the page |
| `--with A.json,B.json` | none | earlier runs' raw files, shown on the page after this run |
| `--render A.json,B.json` | none | only render the page from these raw files |
| `--reading FILE` | none | a text put on the page under "Reading", after a run is read |
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import fastpack.reader
from fastpack.reader.image.crop_decode import decoder

from benchmarks.fuzz._page import render
from benchmarks.procmem import TreeSampler
from benchmarks.sysinfo import fastpack_commit, load, machine, versions
from tests.fuzz.campaign import run_campaign
from tests.fuzz.datasets import build_templates
from tests.fuzz.harness import memory_budget_kib
from tests.fuzz.plan import SEED, TIMEOUT, plan
from tests.fuzz.targets import TARGETS, available

HERE = Path(__file__).absolute().parent
_VERSIONS = ("fastpack", "numpy", "simplejpeg", "opencv-python-headless", "torch", "zstandard")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--targets", default="")
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    parser.add_argument("--memory-mib", type=int, default=memory_budget_kib() >> 10)
    parser.add_argument("--label", default="current tree")
    parser.add_argument("--commit", default="")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--out-json", type=Path, default=HERE / "fuzz_results.json")
    parser.add_argument("--out-md", type=Path, default=HERE / "FUZZ.md")
    parser.add_argument("--with", dest="others", default="")
    parser.add_argument("--render", default="")
    parser.add_argument("--reading", type=Path)
    return parser.parse_args()


def _environment(commit: str) -> dict[str, Any]:
    sources = Path(fastpack.reader.__file__).resolve().parents[1]
    return {
        "machine": machine(),
        "versions": {**versions(_VERSIONS), "window decoder": str(decoder())},
        "commit": commit or fastpack_commit(sources),
        "sources": str(sources),
        "load_before": load(),
    }


def main() -> None:
    args = _arguments()
    if args.render:
        runs = [json.loads(Path(p).read_text()) for p in args.render.split(",")]
        reading = args.reading.read_text() if args.reading else ""
        args.out_md.write_text(render(runs, reading))
        return
    names = args.targets.split(",") if args.targets else [t for t in TARGETS if "selftest" not in t]
    missing = [t for t in names if not available(t)]
    if missing:
        raise SystemExit(f"these targets need a C extension that is not built here: {missing}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fastpack-fuzz-"))
    environment = _environment(args.commit)
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    templates = build_templates(workdir / "templates")
    clock = time.perf_counter()

    def progress(done: int) -> None:
        if done % 5000 == 0:
            rate = done / (time.perf_counter() - clock)
            print(f"{done:,} cases, {rate:.0f}/s", file=sys.stderr, flush=True)

    sampler = TreeSampler(os.getpid(), interval=0.5).start()
    result = run_campaign(
        plan(args.cases, names),
        seed=args.seed,
        workers=args.workers,
        workdir=workdir / "work",
        templates=templates,
        budget_kib=args.memory_mib << 10,
        timeout=args.timeout,
        progress=progress,
    )
    peaks = sampler.stop()
    raw = {
        "label": args.label,
        "date": started,
        "command": " ".join(["python -m benchmarks.fuzz.fuzz_run", *sys.argv[1:]]),
        **environment,
        "load_after": load(),
        **result.to_json(),
        "process_tree_peak_rss_mib": round(peaks.rss_mib),
    }
    args.out_json.write_text(json.dumps(raw, indent=1) + "\n")
    others = [json.loads(Path(p).read_text()) for p in args.others.split(",") if p]
    args.out_md.write_text(render([raw, *others]))
    print(result.summary())
    print(f"{len(result.failures)} failures; raw numbers in {args.out_json}")


if __name__ == "__main__":
    main()
