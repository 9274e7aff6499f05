"""Appending a small fraction to a large dataset against building it whole.

    python -m benchmarks.append.append_bench --samples 1000000 --fraction 0.01 --rounds 3

Makes `--images` distinct tiny JPEGs and `path,label` CSV lists that repeat them (the
build-scale corpus, `benchmarks/builds/_scale_corpus.py`), builds the list of `--samples` lines
`--build-rounds` times (`fastpack.compiler.build`, `--workers`, default options: 256 MiB
shards), then appends a list of `fraction x samples` lines `--rounds` times to the last build
(`fastpack.compiler.append`: versions 2, 3, ...). Each call runs in a fresh process
(`_append_run.py`) and is timed from the call to its return, imports excluded. Before the
first append and after the last, every file of the build (shards, DALI indexes, index) is
hashed (SHA-256) and stat'ed (size, mtime, inode): the bytes of files that differ are the bytes
rewritten. Last, each version is opened 21 times in a fresh process (`DatasetFiles(root,
version=k)`, and the map-style `Dataset(root, version=k)` to its first `len()`), as is the
plain dataset before the appends; the median of the 20 after the first is reported. Then
`--skip-rounds` pairs of appends with `skip_duplicates`: the same list again (every input a
copy of a stored image: each a candidate confirmed by reading its stored member), and a list of
as many new distinct images of the same kind (no candidate, but every input shares its size
with another, so the pass before the jobs reads each once more), beside the plain appends of
the same count. Raw numbers go to `--out`, the page to `--page`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import sysinfo
from benchmarks.builds._scale_corpus import make_corpus, write_list

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = ("fastpack", "numpy", "simplejpeg", "opencv-python-headless", "google-crc32c")
TARGET = 0.03  # an append of 1% costs at most 3% of the full build


def _run(*args: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.append._append_run", *args]
    done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _states(root: Path) -> dict[str, tuple[int, int, int, str]]:
    """(size, mtime_ns, inode, SHA-256) of every file under `root` but the manifest."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != "fastpack.json" and "versions" not in path.parts:
            digest = hashlib.sha256()
            with path.open("rb") as f:
                while chunk := f.read(1 << 22):
                    digest.update(chunk)
            stat = path.stat()
            found[str(path.relative_to(root))] = (
                stat.st_size,
                stat.st_mtime_ns,
                stat.st_ino,
                digest.hexdigest(),
            )
    return found


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def measure(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.workdir)
    corpus_root = work / "corpus"
    corpus = make_corpus(corpus_root, args.images, args.classes)
    added = round(args.samples * args.fraction)
    base_list = write_list(corpus_root / f"list-{args.samples}.csv", args.samples, corpus)
    add_list = write_list(corpus_root / f"list-{added}.csv", added, corpus)
    load_before = sysinfo.load()
    builds = []
    dataset = work / "dataset"
    for r in range(args.build_rounds):
        shutil.rmtree(dataset, ignore_errors=True)
        result = _run("build", str(base_list), str(dataset), "--workers", str(args.workers))
        builds.append({"round": r + 1, "load": sysinfo.load(), **result})
        print(f"build {r + 1}: {result['seconds']:.1f} s", flush=True)
    plain = _run("open", str(dataset))
    before = _states(dataset)
    appends = []
    for r in range(args.rounds):
        result = _run("append", str(dataset), str(add_list), "--workers", str(args.workers))
        appends.append({"round": r + 1, "load": sysinfo.load(), **result})
        print(f"append {r + 1}: {result['seconds']:.2f} s", flush=True)
    skips = _skip_rounds(args, dataset, add_list, work / "corpus-new")
    after = _states(dataset)
    changed = sorted(name for name, state in before.items() if after.get(name) != state)
    opens = {
        str(v): _run("open", str(dataset), "--version", str(v))
        for v in range(1, args.rounds + 2 + len(skips))
    }
    build_median = statistics.median(b["seconds"] for b in builds)
    return {
        "command": "python -m benchmarks.append.append_bench " + " ".join(sys.argv[1:]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": sysinfo.fastpack_commit(REPO),
        "fastpack_from": _fastpack_path(),
        "machine": sysinfo.machine(),
        "versions": sysinfo.versions(DISTRIBUTIONS),
        "load_before": load_before,
        "load_after": sysinfo.load(),
        "corpus": asdict(corpus),
        "workers": args.workers,
        "samples": args.samples,
        "fraction": args.fraction,
        "samples_appended": added,
        "builds": builds,
        "appends": appends,
        "skip_appends": skips,
        "append_over_build": [round(a["seconds"] / build_median, 4) for a in appends],
        "files_before": len(before),
        "bytes_before": sum(s[0] for s in before.values()),
        "files_rewritten": changed,
        "bytes_rewritten": sum(before[name][0] for name in changed),
        "open_plain": plain,
        "open_versions": opens,
    }


def _skip_rounds(
    args: argparse.Namespace, dataset: Path, copies: Path, new_root: Path
) -> list[dict[str, Any]]:
    """Appends with `skip_duplicates`: of `copies` (every input stored already), and of a list
    of new distinct images of the corpus's kind, `args.skip_rounds` times each."""
    added = round(args.samples * args.fraction)
    new_corpus = make_corpus(new_root, added, args.classes, seed=1)
    fresh = write_list(new_root / f"list-{added}.csv", added, new_corpus)
    rounds = []
    for r in range(args.skip_rounds):
        for kind, source in (("copies of stored images", copies), ("new images", fresh)):
            result = _run(
                "append", str(dataset), str(source), "--workers", str(args.workers),
                "--skip-duplicates",
            )  # fmt: skip
            rounds.append({"round": r + 1, "inputs": kind, "load": sysinfo.load(), **result})
            print(f"append with skip_duplicates of {kind}: {result['seconds']:.2f} s", flush=True)
    return rounds


def _fastpack_path() -> str:
    command = [sys.executable, "-c", "import fastpack.compiler as c; print(c.__file__)"]
    done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
    return done.stdout.strip()


def render(results: dict[str, Any]) -> str:
    m, v = results["machine"], results["versions"]
    builds = [b["seconds"] for b in results["builds"]]
    appends = [a["seconds"] for a in results["appends"]]
    ratios = results["append_over_build"]
    worst = max(ratios)
    skips = results.get("skip_appends") or []
    lines = [
        f"# Appends: {results['fraction']:.0%} more to a {results['samples']:,}-sample dataset",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, Linux "
        f"{m['kernel']}, Python {m['python']}; load average (1, 5, 15 min) before / after: "
        f"{results['load_before']} / {results['load_after']}.",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        f"- Command: `{results['command']}`, {results['date']}, fastpack {results['commit']} "
        f"(run from a clean worktree of that commit: {results['fastpack_from']}).",
        "",
        f"Corpus: {results['corpus']['images']:,} distinct synthetic JPEGs of "
        f"{results['corpus']['side_px'][0]}-{results['corpus']['side_px'][1]} px (mean "
        f"{results['corpus']['mean_bytes']:.0f} bytes) in `path,label` lists that repeat them "
        "(`benchmarks/builds/_scale_corpus.py`). The build is `fastpack.compiler.build` of "
        f"{results['samples']:,} lines with {results['workers']} workers and the default "
        "options (256 MiB shards); each append is `fastpack.compiler.append` of "
        f"{results['samples_appended']:,} lines to it, one after the other (versions 2 to "
        f"{len(appends) + 1}). Each call runs in a fresh process and is timed from the call to "
        "its return (imports excluded). Raw numbers: `benchmarks/append/append_results.json`.",
        "",
        "| step | rounds | seconds, median (range) | samples in the dataset after |",
        "|---|---:|---|---:|",
        f"| build of {results['samples']:,} | {len(builds)} | {_summary(builds)} | "
        f"{results['builds'][-1]['samples']:,} |",
    ]
    for a in results["appends"]:
        lines.append(
            f"| append {a['round']} of {a['samples_added']:,} (version {a['version']}) | 1 | "
            f"{a['seconds']:.2f} | {a['samples']:,} |"
        )
    verdict = "**met**" if worst <= TARGET else "**not met**"
    lines += [
        "",
        f"An append of {results['fraction']:.0%} takes "
        + ", ".join(f"{r:.2%}" for r in ratios)
        + f" of the median build's time (target at most {TARGET:.0%}: {verdict}).",
        "",
        f"Bytes of the build's files rewritten by the {len(appends) + len(skips)} appends: "
        f"**{results['bytes_rewritten']:,}** of {results['bytes_before']:,} "
        f"({results['files_before']} files: shards, DALI indexes, index; each compared by "
        "size, mtime, inode and SHA-256 before the first append and after the last"
        + (f"; changed: {', '.join(results['files_rewritten'])}" if results["files_rewritten"]
           else "")
        + ").",
    ]  # fmt: skip
    lines += _skip_lines(results)
    lines += [
        "",
        "Opening a version: the median of 20 opens after a first, in one fresh process "
        "(page cache warm): `DatasetFiles(root, version=k)` reads one manifest (for an earlier "
        "version, also the latest, which records its SHA-256) and maps one index; the map-style "
        "`Dataset(root, version=k)` to its first `len()`.",
        "",
        "| dataset | samples | DatasetFiles, ms | Dataset, ms |",
        "|---|---:|---:|---:|",
    ]
    plain = results["open_plain"]
    lines.append(
        f"| the plain build, before any append | {plain['samples']:,} | "
        f"{plain['dataset_files_median_ms']:.2f} | {plain['dataset_median_ms']:.2f} |"
    )
    latest = max(int(k) for k in results["open_versions"])
    for key, found in results["open_versions"].items():
        name = f"version {key}" + (" (latest)" if int(key) == latest else "")
        lines.append(
            f"| {name} | {found['samples']:,} | {found['dataset_files_median_ms']:.2f} | "
            f"{found['dataset_median_ms']:.2f} |"
        )
    lines += [
        "",
        "What an append's time holds: the plan and the shard jobs of the new inputs only, and "
        "the new version's index, which copies the previous version's rows (a shard's rows at "
        "a time, from the memory-mapped index) and so grows with the dataset, about 100 bytes "
        "a sample; no shard of an earlier version is read or written. Other work shared the "
        "cores (the load averages above): compare runs only at a similar load.",
        "",
    ]
    return "\n".join(lines)


def _skip_lines(results: dict[str, Any]) -> list[str]:
    """The table of the appends with `skip_duplicates`, beside the plain appends."""
    skips = results.get("skip_appends") or []
    if not skips:
        return []
    plain = [a["seconds"] for a in results["appends"]]
    lines = [
        "",
        f"With `skip_duplicates` (`fastpack append --skip-duplicates`), {len(skips)} more "
        f"appends of {results['samples_appended']:,} lines each, against the plain appends "
        f"above (median {statistics.median(plain):.2f} s): the same list again, every input "
        "a copy of a stored image (a candidate in the sorted keys of the previous index's "
        "image size and CRC-32, confirmed by reading the stored member), and a list of as many "
        "new distinct images of the same kind (no candidate; as every input's size is another's, "
        "the pass for duplicates among the new inputs reads each once more before the jobs).",
        "",
        "| append with skip_duplicates | version | inputs left out | samples added | seconds | "
        "over the plain appends' median |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for a in skips:
        lines.append(
            f"| {a['inputs']} | {a['version']} | {a['duplicates']:,} | {a['samples_added']:,} | "
            f"{a['seconds']:.2f} | {a['seconds'] / statistics.median(plain):.2f}x |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=3, help="appends, one after another")
    parser.add_argument("--build-rounds", type=int, default=2)
    parser.add_argument(
        "--skip-rounds", type=int, default=1, help="pairs of appends with skip_duplicates"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--workdir", default="/tmp/fastpack-append")
    parser.add_argument("--out", default=str(REPO / "benchmarks/append/append_results.json"))
    parser.add_argument("--page", default=str(REPO / "benchmarks/append/APPEND.md"))
    parser.add_argument("--render", action="store_true", help="only re-render --page from --out")
    args = parser.parse_args()
    if args.render:
        results = json.loads(Path(args.out).read_text())
    else:
        os.makedirs(args.workdir, exist_ok=True)
        results = measure(args)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    Path(args.page).write_text(render(results))


if __name__ == "__main__":
    main()
