"""Does `fastpack verify` find every changed byte? One byte at a time, in every kind of file.

    python -m benchmarks.verify.flip_bench --seed 31 --commit HEAD \
        --before benchmarks/verify/verify_flips_e87aa07.json \
        --out benchmarks/verify/VERIFY.md --json benchmarks/verify/verify_flips.json

Builds two small datasets in a temporary directory (benchmarks/verify/_flips.py: a tar one with
class names, a zstd field with its dictionary, several shards, DALI indexes, rejected inputs and
a view beside it; the same in TFRecord shards), then for each kind of file changes one byte at a
time (`--flips` random positions and values, plus up to `--swaps` of each whitespace swap in text
files), runs the plain `verify_dataset` in this process, and undoes the change. Counted: the
changes found (verify reported a problem), those whose problems name the changed file, and any
exception (verify must report, not raise). Writes the raw JSON and the page.

`--commit C` measures the code of commit C (its wheel, unpacked first on the import path, as
tests/compiler/golden/write_digests.py's `commit_package` makes it), whatever the working tree
holds; `--before JSON` adds the found counts of an earlier run (e.g. of an older commit) beside.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from fastpack.reader import verify_dataset

import fastpack
from benchmarks import sysinfo as _sysinfo
from benchmarks.verify._flips import KINDS, kind_files, make_datasets, plan_flips, run_flips

REPO = Path(__file__).resolve().parents[2]
VERSIONS = ("fastpack", "numpy", "simplejpeg", "zstandard", "google-crc32c")


def measure(seed: int, flips: int, swaps: int, work: Path) -> dict[str, Any]:
    roots = make_datasets(work)
    for root in roots.values():
        report = verify_dataset(root)
        if not report.ok:
            raise RuntimeError(f"the clean dataset does not verify:\n{report.format()}")
    rng = np.random.default_rng(seed)
    kinds = {}
    for name, kind in KINDS.items():
        files = kind_files(roots, kind)
        plan = plan_flips(roots, kind, rng, flips, swaps)
        size = sum(f.stat().st_size for f in files)
        outcome = run_flips(roots[kind.dataset], plan, len(files), size)
        kinds[name] = {"dataset": kind.dataset, "pattern": kind.pattern, **outcome.to_dict()}
        found = sum(outcome.found.values())
        print(f"{name}: {found} of {len(plan)} found, {outcome.seconds:.0f} s", flush=True)
    after = {f: verify_dataset(r).ok for f, r in roots.items()}
    return {"kinds": kinds, "clean_after": after}


def _found(kind: dict[str, Any], random: bool) -> tuple[int, int]:
    """(found, tried) of a kind's random changes, or of its whitespace swaps."""
    hows = [h for h in kind["flips"] if (h == "random") == random]
    return sum(kind["found"].get(h, 0) for h in hows), sum(kind["flips"][h] for h in hows)


def render(results: dict[str, Any], before: dict[str, Any] | None = None) -> str:
    s = results["settings"]
    lines = [
        "# verify: one changed byte, in every kind of file",
        "",
        "`python -m benchmarks.verify.flip_bench --seed {seed} --flips {flips} --swaps {swaps}`"
        " (benchmarks/verify/flip_bench.py; raw JSON: `verify_flips.json`).".format(**s),
        "",
        "Two small datasets built by `fastpack build` from a JSON-lines list of real JPEGs (160 "
        "rows, 3 of them broken: rejected): a tar dataset with class names, a zstd text field "
        "with a trained dictionary, 7 shards with their DALI indexes, `rejects.jsonl` and a "
        "view beside it (`fastpack view`), and the same as TFRecord shards. For each kind of "
        "file, one byte at a time is changed (at a random position to a random other value; "
        "in text files also each whitespace swap a parser may not see, `\\n` to `\\v` and ` ` "
        "to `\\t`, at random positions), the plain `verify` (`verify_dataset`, no `--decode`) "
        "runs in the same process, and the byte is restored. *Found*: verify reported at "
        "least one problem; *named*: a problem names the changed file. `--decode` is needed "
        "for none of them.",
        "",
        "| kind of file | files | bytes | random changes found | whitespace swaps found | "
        "named | verify raised | seconds |"
        + (f" found at {before['commit']} (random; swaps) |" if before else ""),
        "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if before else ""),
    ]
    total_found = total = 0
    for name, k in results["kinds"].items():
        random_found, random_n = _found(k, random=True)
        swap_found, swap_n = _found(k, random=False)
        swaps = f"{swap_found:,} of {swap_n:,}" if swap_n else "-"
        n = random_n + swap_n
        total, total_found = total + n, total_found + random_found + swap_found
        row = (
            f"| {name} (`{k['pattern']}`, {k['dataset']}) | {k['files']} | {k['bytes']:,} | "
            f"{random_found:,} of {random_n:,} | {swaps} | {k['named']:,} of {n:,} | "
            f"{k['errors']} | {k['seconds']:.0f} |"
        )
        if before:
            old = before["kinds"].get(name)
            row += f" {_before_cell(old)} |"
        lines.append(row)
    lines += [
        "",
        f"All kinds: {total_found:,} of {total:,} changes found "
        f"({100 * total_found / total:.1f}%); the datasets verified clean before and after.",
        "",
        "What makes each kind covered (formats/SPEC.md sections 2, 8 and 9): the manifest records "
        "its own SHA-256 and is checked to be the canonical text of what it holds (whitespace, "
        "escapes and unknown keys, which a SHA-256 of its content cannot see); it records the "
        "size and SHA-256 of the index, each shard (and its CRC-32C), each DALI index, the "
        "dictionary and the rejects; a view file (version 2) ends with a CRC-32C of all its "
        "bytes before it.",
        "",
        *(_before_note(before) if before else []),
        f"Commit {results['commit']}, {results['date']}; machine: {results['machine']['cpu']}, "
        f"{results['machine']['cores']} cores, Python {results['machine']['python']}; load "
        f"{results['load']}; versions: "
        + ", ".join(f"{k} {v}" for k, v in results["versions"].items())
        + ".",
        "",
    ]
    return "\n".join(lines)


def _before_cell(kind: dict[str, Any] | None) -> str:
    if kind is None:
        return "-"
    random_found, random_n = _found(kind, random=True)
    swap_found, swap_n = _found(kind, random=False)
    swaps = f"; {swap_found:,} of {swap_n:,}" if swap_n else ""
    raised = f" (verify raised on {kind['errors']:,})" if kind["errors"] else ""
    return f"{random_found:,} of {random_n:,}{swaps}{raised}"


def _before_note(before: dict[str, Any]) -> list[str]:
    return [
        f"The last column: the same run (seed {before['settings']['seed']}, the same datasets as "
        f"that commit's `fastpack build` writes them) with the code of {before['commit']} "
        f"({before['date']}; raw JSON `{before['json_name']}`), which wrote no checksum of the "
        "manifest, DALI indexes, rejects or views and did not check the views; its verify "
        "raised instead of reporting on some index changes (a key that is not UTF-8; a shard "
        "number past the manifest's, which sized a count array: 25 GiB).",
        "",
    ]


def _run_at(commit: str, argv: list[str]) -> None:
    """This benchmark, run with the code of `commit` (its wheel first on the import path)."""
    from tests.compiler.golden.write_digests import commit_package, short_sha  # noqa: PLC0415 -- checkout

    label = f"{short_sha(commit)} (its wheel)"
    with commit_package(commit) as lib, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": f"{lib}{os.pathsep}{REPO}"}
        command = [sys.executable, "-m", "benchmarks.verify.flip_bench", *argv]
        subprocess.run([*command, "--commit-label", label], cwd=tmp, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--flips", type=int, default=1000, help="random changes per kind")
    parser.add_argument("--swaps", type=int, default=250, help="of each whitespace swap, at most")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/verify/VERIFY.md"))
    parser.add_argument("--json", type=Path, default=Path("benchmarks/verify/verify_flips.json"))
    parser.add_argument("--commit", help="measure this commit's code (its wheel)")
    parser.add_argument("--commit-label", help=argparse.SUPPRESS)  # set by --commit's child
    parser.add_argument("--before", type=Path, help="raw JSON of an earlier run, shown beside")
    parser.add_argument("--render", type=Path, help="only re-render this raw JSON to --out")
    args = parser.parse_args()
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    if args.render:
        results = json.loads(args.render.read_text(encoding="utf-8"))
        args.out.write_text(render(results, before), encoding="utf-8")
        return
    if args.commit:
        argv = ["--seed", str(args.seed), "--flips", str(args.flips), "--swaps", str(args.swaps)]
        argv += ["--out", str(args.out.resolve()), "--json", str(args.json.resolve())]
        argv += ["--before", str(args.before.resolve())] if args.before else []
        _run_at(args.commit, argv)
        return
    with tempfile.TemporaryDirectory(prefix="fastpack-flips-") as tmp:
        measured = measure(args.seed, args.flips, args.swaps, Path(tmp))
    results = {
        "settings": {"seed": args.seed, "flips": args.flips, "swaps": args.swaps},
        "commit": args.commit_label or _sysinfo.fastpack_commit(REPO),
        "fastpack_from": str(Path(fastpack.__file__).parent),
        "json_name": args.json.name,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _sysinfo.machine(),
        "load": _sysinfo.load(),
        "versions": _sysinfo.versions(VERSIONS),
        **measured,
    }
    args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    args.out.write_text(render(results, before), encoding="utf-8")


if __name__ == "__main__":
    main()
