"""A build of a wild corpus at scale: no input stops it, resume after kill -9 gives the same
bytes, and no worker's memory passes the budget.

    python -m benchmarks.builds.wild_build --inputs 1000000 --workers 2 --work /work/wild

Makes the corpus of `wild_corpus` under `--work` (`corpus-N-hF`, kept between runs; the same
options as `wild_corpus`). Then, per configuration of `--configs` (`baseline`: `fastpack build
--baseline`; `default`: the default structure check), in `--work/<config>-wW`:

1. `uninterrupted`: `python -m fastpack build list.csv OUT --workers W --shard-size S`, a
   subprocess in a process group of its own; every process of it sampled (VmRSS, RssAnon and the
   kernel's VmHWM, `_scale_memory`). A build that stops (an exit status, a signal) is run again
   with `--resume` once, to see whether a person's rerun would get past the input.
2. If it finished: every regular input must be a sample, and every hostile input must meet its
   kind's expectation (`_wild_hostile`): a reject whose reason matches, or a sample stored as
   it was or converted (`_wild_check`).
3. `killed`: the same build into a second directory, its whole process group sent SIGKILL once
   `--kill-at` of the uninterrupted build's shards are written, then `--resume` until it
   finishes; every file of the result compared with the uninterrupted build's (SHA-256).
4. Every pool worker's peak RSS (and the build process's) against `--rss-budget-mib`.

`--probe` first builds, per hostile kind and configuration, a small list of that kind's inputs
and a few regular ones with one worker: what each kind does to a build on its own.
`--fastpack COMMIT` builds with that commit's fastpack (its wheel, built here) instead of the
working tree's. Results go to `--out` (raw JSON: machine, versions, commit, corpus, every run)
and `--page` (Markdown; `--render A.json B.json` only renders). Outputs are deleted after their
checks unless `--keep`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks import sysinfo
from benchmarks.builds import _wild_check as check
from benchmarks.builds._scale_run import output_bytes
from benchmarks.builds._wild_hostile import BY_NAME, CONFIGS
from benchmarks.builds._wild_page import render
from benchmarks.builds._wild_run import Builds
from benchmarks.builds.wild_corpus import LIST_NAME, add_corpus_options, make_corpus, params_of
from tests.compiler.golden.write_digests import commit_package, short_sha

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = ("fastpack", "numpy", "simplejpeg", "opencv-python-headless", "pillow")
_PROBE_REGULAR = 8
_PROBE_PER_KIND = 8
_PROBE_TIMEOUT_S = 300.0
_RESUME_TRIES = 3


def libjpeg_turbo() -> str:
    """The libjpeg-turbo version the transcoder was built against."""
    try:
        extension = importlib.import_module("fastpack.compiler.images._jpeg_baseline")
    except ImportError:
        return "transcoder not built"
    number = int(extension.LIBJPEG_TURBO_VERSION)
    return f"{number // 1_000_000}.{number // 1000 % 1000}.{number % 1000}"


def _du_kib(path: Path) -> int:
    done = subprocess.run(["du", "-sk", str(path)], check=True, capture_output=True, text=True)
    return int(done.stdout.split()[0])


def _shards_written(out: Path) -> int:
    try:
        return sum(1 for name in os.listdir(out / "shards") if name.endswith(".tar"))
    except FileNotFoundError:
        return 0


def _budget(memory: dict[str, Any], budget_mib: float) -> dict[str, Any]:
    processes = [p for p in memory["processes"] if p["role"] in ("build", "worker")]
    over = [p for p in processes if p["peak_rss_mib"] > budget_mib]
    build = [p["peak_rss_mib"] for p in processes if p["role"] == "build"]
    return {
        "budget_mib": budget_mib,
        "worker_peak_rss_mib": [p["peak_rss_mib"] for p in processes if p["role"] == "worker"],
        "build_peak_rss_mib": max(build, default=None),
        "within": not over,
        "over": over,
    }


@dataclass(frozen=True)
class Session:
    """One run's options, builds and corpus."""

    args: argparse.Namespace
    builds: Builds
    corpus: Path
    inputs: list[str]

    @property
    def source(self) -> Path:
        return self.corpus / LIST_NAME

    def _resume_until_done(self, out: Path, log: Path, baseline: bool) -> list[dict[str, Any]]:
        command = self.builds.command(self.source, out, baseline=baseline, resume=True)
        runs: list[dict[str, Any]] = []
        for k in range(_RESUME_TRIES):
            runs.append(self.builds.run(command, log.with_name(f"{log.stem}-{k}.log")))
            if runs[-1]["exit"] == "ok":
                break
        return runs

    def kill_test(self, config: str, full: Path, wall_s: float) -> dict[str, Any]:
        """Kill a second build part way (module docstring, step 3), resume it, compare."""
        work, baseline, kill_at = full.parent, config == "baseline", self.args.kill_at
        killed = work / "killed"
        shutil.rmtree(killed, ignore_errors=True)
        shards = _shards_written(full)
        target = max(1, int(shards * kill_at))
        kill_after_s: float = wall_s * kill_at

        def kill_when() -> bool:
            if shards <= 1:  # one shard: kill at a fraction of the uninterrupted build's time
                return time.monotonic() - began >= kill_after_s
            return _shards_written(killed) >= target

        began = time.monotonic()
        command = self.builds.command(self.source, killed, baseline=baseline)
        first = self.builds.run(command, work / "logs" / "killed.log", kill_when)
        result: dict[str, Any] = {
            "kill_at": kill_at,
            "target_shards": target,
            "killed_run": first,
            "shards_at_kill": _shards_written(killed),
            "manifest_at_kill": (killed / "fastpack.json").exists(),
        }
        if not first["killed"]:
            result["note"] = "the build ended before the kill"
        else:
            log = work / "logs" / "resume.log"
            result["resumes"] = self._resume_until_done(killed, log, baseline)
            if result["resumes"][-1]["exit"] == "ok":
                result["compare"] = check.compare_trees(full, killed)
        if not self.args.keep:
            shutil.rmtree(killed, ignore_errors=True)
        return result

    def config(self, config: str) -> dict[str, Any]:
        """Steps 1 to 4 of the module docstring for one configuration."""
        work = self.args.work / f"{config}-w{self.builds.workers}"
        full, baseline = work / "uninterrupted", config == "baseline"
        shutil.rmtree(full, ignore_errors=True)
        load = sysinfo.load()
        command = self.builds.command(self.source, full, baseline=baseline)
        print(f"{config}: {' '.join(command[1:])}", flush=True)
        run = self.builds.run(command, work / "logs" / "uninterrupted.log")
        print(f"{config}: {run['exit']} in {run['wall_s']} s", flush=True)
        result: dict[str, Any] = {
            "config": config,
            "workers": self.builds.workers,
            "load_before": load,
            "uninterrupted": run,
            "finished_without_a_person": run["exit"] == "ok",
            "budget": _budget(run["memory"], self.args.rss_budget_mib),
        }
        if run["exit"] != "ok":
            again = self.builds.command(self.source, full, baseline=baseline, resume=True)
            rerun = result["rerun_with_resume"] = self.builds.run(
                again, work / "logs" / "rerun.log"
            )
            print(f"{config}: rerun with --resume: {rerun['exit']}", flush=True)
        else:
            result["inputs_per_s"] = round(len(self.inputs) / run["wall_s"], 1)
            result["check"] = check.check_outcomes(self.corpus, full, config, self.inputs)
            result["output"] = {**output_bytes(full), "disk_kib": _du_kib(full)}
            print(f"{config}: expectations all met: {result['check']['all_met']}", flush=True)
            if self.args.kill_at > 0:
                kill = result["kill"] = self.kill_test(config, full, run["wall_s"])
                same = kill.get("compare", {}).get("identical")
                print(f"{config}: after kill -9 and --resume, identical: {same}", flush=True)
        if not self.args.keep:
            shutil.rmtree(full, ignore_errors=True)
        return result

    def probe_one(
        self, name: str, entries: list[dict[str, Any]], regular: list[str], config: str
    ) -> dict[str, Any]:
        work = self.args.work / "probe" / f"{name}-{config}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        listed = [str(self.corpus / p) for p in [*(e["path"] for e in entries), *regular]]
        (work / LIST_NAME).write_text("path,label\n" + "".join(f"{p},x\n" for p in listed))
        builds = replace(self.builds, workers=1, timeout=_PROBE_TIMEOUT_S)
        command = builds.command(work / LIST_NAME, work / "out", baseline=config == "baseline")
        run = builds.run(command, work / "build.log")
        found = check.Outcomes(self.corpus, work / "out")
        finished = run["exit"] == "ok"
        outcomes = [found.of(e, config, str(self.corpus / e["path"])) for e in entries]
        if not self.args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return {
            "kind": name,
            "config": config,
            "inputs": len(entries),
            "exit": run["exit"],
            "wall_s": run["wall_s"],
            "last_stderr": [] if finished else run["stderr_tail"][-1:],
            "peak_rss_mib": max(p["peak_rss_mib"] for p in run["memory"]["processes"]),
            "hostile_outcomes": [label for label, _ in outcomes] if finished else [],
            "met": sum(miss is None for _, miss in outcomes) if finished else 0,
            "misses": [m for _, m in outcomes if m is not None][:2] if finished else [],
            "regular_samples": sum(str(self.corpus / p) in found.samples for p in regular),
        }

    def probe(self) -> list[dict[str, Any]]:
        """Per kind and configuration: a build of that kind's inputs (up to `_PROBE_PER_KIND`)
        and `_PROBE_REGULAR` regular ones, one worker; the list names them by absolute path."""
        hostile = check.load_hostile(self.corpus)
        hostile_paths = {e["path"] for e in hostile}
        regular = [p for p in self.inputs if p not in hostile_paths][:_PROBE_REGULAR]
        rows = []
        for name in [k for k in BY_NAME if any(e["kind"] == k for e in hostile)]:
            entries = [e for e in hostile if e["kind"] == name][:_PROBE_PER_KIND]
            for config in self.args.configs:
                rows.append(self.probe_one(name, entries, regular, config))
                print(f"probe {name} {config}: {rows[-1]['exit']}", flush=True)
        return rows


def run_all(args: argparse.Namespace, builds: Builds, commit: str) -> None:
    params = params_of(args)
    corpus = args.work / f"corpus-{params.inputs}-h{params.hostile_fraction:g}"
    print(f"corpus: {corpus}", flush=True)
    info = make_corpus(corpus, params, args.processes)
    session = Session(args, builds, corpus, check.list_inputs(corpus, LIST_NAME))
    options = {k: str(v) for k, v in vars(args).items() if k != "render"}
    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": sysinfo.machine(),
        "versions": {**sysinfo.versions(DISTRIBUTIONS), "libjpeg-turbo": libjpeg_turbo()},
        "commit": commit,
        "free_gib_before": round(shutil.disk_usage(args.work).free / 2**30, 1),
        "options": options,
        "corpus": {"path": str(corpus), **info},
        "probe": session.probe() if args.probe else [],
        "configs": [],
    }
    tag = f"_{short_sha(args.fastpack)}" if args.fastpack else ""
    default = f"benchmarks/builds/wild_results_{params.inputs}_w{builds.workers}{tag}.json"
    out = args.out or REPO / default
    for config in args.configs:
        results["configs"].append(session.config(config))
        results["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        out.write_text(json.dumps(results, indent=1) + "\n")
    args.page.write_text(render([results]))
    print(f"wrote {out} and {args.page}", flush=True)


def _configs(text: str) -> list[str]:
    names = [s for s in text.split(",") if s]
    if not names or any(n not in CONFIGS for n in names):
        raise argparse.ArgumentTypeError(f"configurations are {', '.join(CONFIGS)}, not {text!r}")
    return names


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_corpus_options(parser)
    add = parser.add_argument
    add("--work", type=Path, default=Path("/work/wild"), help="corpus, outputs, logs")
    add("--workers", type=int, default=os.cpu_count() or 1)
    add("--configs", type=_configs, default=list(CONFIGS))
    add("--shard-size", default="64MiB", help="passed to fastpack build")
    add("--kill-at", type=float, default=0.5, help="of the shards written; 0: no kill test")
    add("--rss-budget-mib", type=float, default=1024.0, help="per build process")
    add("--interval", type=float, default=0.1, help="seconds between memory samples")
    add("--timeout", type=float, default=6 * 3600, help="seconds per build")
    add("--probe", action="store_true", help="also build each hostile kind alone")
    add("--keep", action="store_true", help="keep the outputs")
    add("--fastpack", metavar="COMMIT", help="build with this commit's fastpack")
    add("--out", type=Path, help="raw JSON (default: wild_results_N_wW[_COMMIT].json here)")
    add("--page", type=Path, default=REPO / "benchmarks/builds/WILD.md")
    add("--render", type=Path, nargs="*", help="only render these raw JSON files to --page")
    return parser


def main() -> None:
    args = _parser().parse_args()
    if args.render is not None:
        args.page.write_text(render([json.loads(p.read_text()) for p in args.render]))
        return
    args.work = args.work.resolve()
    builds = Builds(
        workers=args.workers,
        shard_size=args.shard_size,
        timeout=args.timeout,
        interval=args.interval,
    )
    commit = sysinfo.fastpack_commit(REPO)
    with contextlib.ExitStack() as stack:
        if args.fastpack:
            lib = stack.enter_context(commit_package(args.fastpack))
            env = {**os.environ, "PYTHONPATH": str(lib)}
            builds = replace(builds, env=env, cwd=lib.parent)
            commit = f"{short_sha(args.fastpack)} (its wheel; the benchmark at {commit})"
        run_all(args, builds, commit)


if __name__ == "__main__":
    main()
