"""Multi-field samples (format v2) against image + class: reader images/s and build samples/s.

    python -m benchmarks.fields.fields_bench --corpus /tmp/photo-corpus --before /tmp/fp-before \
        --out benchmarks/fields/FIELDS.md

Four measurements, each interleaved so that the load of a shared machine falls on every side:

- **reader**: the map-style loader (`Dataset(transform=RandomResizedCrop(size))` +
  `make_loader`, persistent workers) over datasets of the same images: `image-class`, the v1
  dataset of a `path, label` list; `fields`, a v2 dataset of a JSONL list with a COCO-like
  caption (`txt`, text) and 1 to 5 class ids (`labels` -> `labels.json`, class_ids) per image,
  read as `fields=("jpg", "cls", "txt", "labels.json")`; `fields-pad`, the same with
  `pad=True`; `fields-zstd`, the same columns built with a schema file that stores the caption
  as `txt.zst` (zstd level 19, trained dictionary). One process per round holds a loader per
  variant and runs one epoch of each in turn (`_fields_run`);
- **before**: with `--before DIR` (a checkout of an older commit), each round also runs the
  `image-class` variant in a process that imports fastpack from DIR (its `fastpack`,
  `compiler`, `reader`, `formats`, `storage` folders linked into a staging folder put first on
  the path, as `.ci/typecheck` stages them); the current sources run staged the same way;
- **build**: `fastpack.build` of a list file of the images, `path, label` against `path, label`
  plus three columns (caption text, class ids, a COCO-like image-metadata JSON object), one
  after the other in this process (A B A B), after one untimed pair;
- **profile** (where the build time goes): each list built in this process with one worker,
  its CPU time per sample, then once under cProfile: the functions whose own time grows most.

Lists repeat the corpus's images (`--repeat`, `--build-repeat` times) to get epochs and builds
long enough to time. Raw numbers go to `WORKDIR/results.json`; the page to `--out`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import zstandard
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.build_schema import read_build_schema

from benchmarks import sysinfo as _sysinfo
from benchmarks.fields._captions import captions, image_metadata
from benchmarks.readers.peers._base import imagefolder_root, list_imagefolder

REPO = Path(__file__).resolve().parent.parent
SHARD_BYTES = 16 << 20  # as the reader benchmark's fastpack peer: shard jobs for 2 workers
PARTS = ("reader", "build", "profile")
SOURCE_FOLDERS = ("compiler", "reader", "formats", "storage")
NUM_LABELS = 80  # COCO's categories
FIELDS = ("jpg", "cls", "txt", "labels.json")
ZSTD_FIELDS = ("jpg", "cls", "txt.zst", "labels.json")
ZSTD_SCHEMA = {
    "fields": [
        {"name": "jpg", "type": "jpeg", "column": "path"},
        {"name": "cls", "type": "class", "column": "label"},
        {
            "name": "txt.zst",
            "type": "text",
            "column": "txt",
            "zstd": {"level": 19, "dictionary": True},
        },
        {"name": "labels.json", "type": "class_ids", "column": "labels"},
    ]
}
VARIANTS = ("image-class", "fields", "fields-pad", "fields-zstd")
BASELINE = "image-class"
BEFORE = "image-class (before)"


# -- inputs ---------------------------------------------------------------------------------------


def write_lists(corpus: Path, lists: Path, repeat: int, build_repeat: int) -> dict[str, Path]:
    """The list files (absolute image paths), the corpus's images repeated: `image-class` and
    `fields` for the reader, `build-plain` and `build-extra` for the build."""
    samples = list_imagefolder(imagefolder_root(corpus))
    lists.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, times, extra in (
        ("image-class", repeat, ()),
        ("fields", repeat, ("txt", "labels")),
        ("build-plain", build_repeat, ()),
        ("build-extra", build_repeat, ("txt", "labels", "meta")),
    ):
        rows = samples * times
        text, meta = captions(len(rows), seed=1), image_metadata(len(rows), seed=1)
        rng = random.Random(2)
        lines = []
        for k, sample in enumerate(rows):
            item: dict[str, Any] = {"path": str(sample.path), "label": sample.path.parent.name}
            values = {
                "txt": text[k],
                "labels": sorted(rng.sample(range(NUM_LABELS), rng.randint(1, 5))),
                "meta": meta[k],
            }
            item.update((key, values[key]) for key in extra)
            lines.append(json.dumps(item, separators=(",", ":")) + "\n")
        path = lists / f"{name}.jsonl"
        path.write_text("".join(lines), encoding="utf-8")
        paths[name] = path
    schema = lists / "fields-zstd.schema.json"
    schema.write_text(json.dumps(ZSTD_SCHEMA, indent=2) + "\n", encoding="utf-8")
    paths["fields-zstd.schema"] = schema
    return paths


def _options(workers: int, schema: Path | None = None) -> Any:
    return BuildOptions(
        workers=workers,
        shard_size=SHARD_BYTES,
        progress=False,
        schema=read_build_schema(schema) if schema is not None else None,
    )


def build_reader_datasets(lists: dict[str, Path], data: Path, workers: int) -> dict[str, Path]:
    """The reader's datasets, built afresh."""

    out = {}
    for name, source, schema in (
        ("image-class", lists["image-class"], None),
        ("fields", lists["fields"], None),
        ("fields-zstd", lists["fields"], lists["fields-zstd.schema"]),
    ):
        out[name] = data / name
        shutil.rmtree(out[name], ignore_errors=True)
        build(source, out[name], _options(workers, schema))
    return out


def describe_dataset(path: Path) -> dict[str, Any]:
    manifest = json.loads((path / "fastpack.json").read_text())
    return {
        "version": manifest["version"],
        "fields": manifest["fields"],
        "samples": manifest["num_samples"],
        "shards": len(manifest["shards"]),
        "bytes": sum(s["bytes"] for s in manifest["shards"]),
    }


# -- reader ---------------------------------------------------------------------------------------


def stage(root: Path, dest: Path) -> Path:
    """A folder holding `fastpack` as installed, made of links to `root`'s sources."""
    package = dest / "fastpack"
    shutil.rmtree(dest, ignore_errors=True)
    package.mkdir(parents=True)
    for f in (root / "fastpack").iterdir():
        if f.name != "__pycache__":
            (package / f.name).symlink_to(f)
    for part in SOURCE_FOLDERS:
        (package / part).symlink_to(root / part)
    return dest


def run_reader(
    staged: Path, variants: Sequence[str], args: argparse.Namespace, log: Path
) -> dict[str, Any]:
    """One `_fields_run` process importing fastpack from `staged`."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.fields._fields_run",
        "--epochs",
        str(args.epochs),
        "--workers",
        str(args.workers),
        "--batch-size",
        str(args.batch_size),
        "--size",
        str(args.size),
    ]
    for v in variants:
        command += ["--variant", v]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PYTHONPYCACHEPREFIX": str(args.workdir / "pycache"),  # no writes into a checkout
    }
    load_before = _sysinfo.load()
    done = subprocess.run(
        command,
        cwd=staged,
        env=env,
        capture_output=True,
        text=True,
        timeout=args.timeout,
        check=False,
    )
    log.write_text(done.stdout + done.stderr)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"reader run failed (exit {done.returncode}), see {log}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    expected = (staged / "fastpack" / "reader").resolve()
    if not Path(result["fastpack_reader"]).is_relative_to(expected):
        raise SystemExit(f"{log}: imported {result['fastpack_reader']}, expected {expected}")
    result["load_before"], result["load_after"] = load_before, _sysinfo.load()
    return result


def reader_specs(datasets: dict[str, Path], names: Sequence[str]) -> list[str]:
    specs = {
        "image-class": f"image-class={datasets['image-class']}",
        "fields": f"fields={datasets['fields']}:{','.join(FIELDS)}",
        "fields-pad": f"fields-pad={datasets['fields']}:{','.join(FIELDS)}:pad",
        "fields-zstd": f"fields-zstd={datasets['fields-zstd']}:{','.join(ZSTD_FIELDS)}",
    }
    return [specs[n] for n in names]


def reader_rounds(
    datasets: dict[str, Path], args: argparse.Namespace, logs: Path
) -> list[dict[str, Any]]:
    """`--rounds` rounds: the current sources' process (every variant) and, with `--before`,
    the older sources' process (image-class), their order swapped every round."""
    current = stage(REPO, args.workdir / "src-current")
    before = stage(args.before, args.workdir / "src-before") if args.before else None
    names = [v for v in VARIANTS if v in args.variants]
    rounds = []
    for r in range(args.rounds):
        runs: list[tuple[str, Path, list[str]]] = [("current", current, names)]
        if before is not None:
            runs.append(("before", before, ["image-class"]))
        if r % 2:
            runs.reverse()
        found: dict[str, Any] = {"round": r + 1}
        for label, staged, variants in runs:
            print(f"reader round {r + 1}: {label} {', '.join(variants)}", flush=True)
            spec = reader_specs(datasets, variants)
            found[label] = run_reader(staged, spec, args, logs / f"reader-{r + 1}-{label}.log")
        rounds.append(found)
    return rounds


# -- build ----------------------------------------------------------------------------------------


def build_rounds(lists: dict[str, Path], args: argparse.Namespace) -> list[dict[str, Any]]:
    """One untimed pair, then `--build-rounds` pairs, strictly alternating (A B A B: every
    build follows one of the other kind), each into a fresh output folder after the previous
    one is removed and synced to disk."""

    out = args.workdir / "build-out"
    kinds = [("plain", lists["build-plain"]), ("extra", lists["build-extra"])]
    found = []
    for r in range(args.build_rounds + 1):
        for kind, source in kinds:
            shutil.rmtree(out, ignore_errors=True)
            os.sync()
            load = _sysinfo.load()
            began = time.perf_counter()
            summary = build(source, out, _options(args.workers))
            seconds = time.perf_counter() - began
            print(f"build round {r}: {kind} {summary.samples / seconds:,.0f} samples/s", flush=True)
            if r > 0:
                found.append(
                    {
                        "round": r,
                        "kind": kind,
                        "seconds": seconds,
                        "samples": summary.samples,
                        "bytes": summary.bytes,
                        "shards": summary.shards,
                        "load_before": load,
                        "fields": describe_dataset(out)["fields"],
                    }
                )
    shutil.rmtree(out, ignore_errors=True)
    return found


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def profile_build(lists: dict[str, Path], args: argparse.Namespace) -> dict[str, Any]:
    """Where the extra columns' build time goes: each list built in this process
    (`workers=1`: shard jobs run here), first unprofiled (CPU seconds, `--profile-rounds`
    times, alternating), then once under cProfile; the functions whose own time grows most,
    per sample."""

    out = args.workdir / "build-out"
    kinds = [("plain", lists["build-plain"]), ("extra", lists["build-extra"])]
    cpu: dict[str, list[float]] = {"plain": [], "extra": []}
    own: dict[str, dict[str, float]] = {}
    samples = 0
    for r in range(args.profile_rounds + 1):
        for kind, source in kinds:
            shutil.rmtree(out, ignore_errors=True)
            os.sync()
            profiler = cProfile.Profile() if r == args.profile_rounds else None
            began = _cpu()
            if profiler is not None:
                profiler.enable()
            samples = build(source, out, _options(1)).samples
            if profiler is None:
                cpu[kind].append((_cpu() - began) / samples)
                continue
            profiler.disable()
            stats: dict[Any, Any] = cast(Any, pstats.Stats(profiler)).stats  # untyped
            own[kind] = {
                f"{'/'.join(Path(f).parts[-2:])}:{line}({name})": tt / samples
                for (f, line, name), (_, _, tt, _, _) in stats.items()
            }
    shutil.rmtree(out, ignore_errors=True)
    grown = sorted(
        (
            (own["extra"].get(k, 0) - own["plain"].get(k, 0), k)
            for k in own["extra"].keys() | own["plain"].keys()
        ),
        reverse=True,
    )
    return {
        "samples": samples,
        "cpu_us": {k: [1e6 * v for v in values] for k, values in cpu.items()},
        "profiled_us": {k: 1e6 * sum(v.values()) for k, v in own.items()},
        "grown": [
            {
                "function": k,
                "plain_us": 1e6 * own["plain"].get(k, 0),
                "extra_us": 1e6 * own["extra"].get(k, 0),
                "grown_us": 1e6 * d,
            }
            for d, k in grown[: args.profile_top]
        ],
    }


def profile_lines(found: dict[str, Any], args: dict[str, Any]) -> list[str]:
    plain, extra = found["cpu_us"]["plain"], found["cpu_us"]["extra"]
    lines = [
        "## Where the build time goes",
        "",
        f"Each list ({found['samples']:,} samples) built in one process with `workers=1` (shard "
        "jobs in the process): CPU time per sample (user + system, median (range) of "
        f"{args['profile_rounds']} builds each, alternating) is {_spread(plain, 1)} us for "
        f"`path, label` and {_spread(extra, 1)} us with the three extra columns: "
        f"{statistics.median(extra) - statistics.median(plain):.1f} us more per sample, "
        f"{statistics.median(plain) / statistics.median(extra):.3f}x the samples per CPU "
        "second. One more build of each under cProfile (which inflates Python calls: "
        f"{found['profiled_us']['plain']:.0f} and {found['profiled_us']['extra']:.0f} us per "
        "sample profiled); the functions whose own time grew most, per sample:",
        "",
        "| function (own time) | path, label us | + 3 columns us | grown us |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| `{g['function']}` | {g['plain_us']:.1f} | {g['extra_us']:.1f} | {g['grown_us']:.1f} |"
        for g in found["grown"]
    ]
    return [*lines, ""]


# -- report ---------------------------------------------------------------------------------------


def _spread(values: Sequence[float], digits: int = 0) -> str:
    med = statistics.median(values)
    return f"{med:,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def _epochs(rounds: Sequence[dict[str, Any]], side: str, variant: str) -> list[dict[str, Any]]:
    return [
        {**e, "round": r["round"]}
        for r in rounds
        if side in r
        for e in r[side]["runs"].get(variant, {}).get("epochs", [])
    ]


def _rate(epoch: dict[str, Any]) -> float:
    return float(epoch["images"] / epoch["seconds"])


def _paired(
    rounds: Sequence[dict[str, Any]],
    variant: str,
    side: str = "current",
    base: tuple[str, str] = ("current", BASELINE),
) -> list[float]:
    """Per cycle (same process: adjacent epochs), or per round (`before`: adjacent processes,
    median epochs), the variant's images/s over the baseline's."""
    if side == base[0]:
        ours = {(e["round"], e["cycle"]): _rate(e) for e in _epochs(rounds, side, variant)}
        theirs = {(e["round"], e["cycle"]): _rate(e) for e in _epochs(rounds, *base)}
        return [ours[k] / theirs[k] for k in ours if k in theirs]
    ratios = []
    for r in rounds:
        a = [_rate(e) for e in _epochs([r], side, variant)]
        b = [_rate(e) for e in _epochs([r], *base)]
        if a and b:
            ratios.append(statistics.median(a) / statistics.median(b))
    return ratios


def _cpu_ms(rounds: Sequence[dict[str, Any]], side: str, variant: str) -> float:
    """Median CPU ms per image (trainer and workers) over the variant's epochs."""
    return statistics.median(
        1000 * float(e["cpu_s"]) / int(e["images"]) for e in _epochs(rounds, side, variant)
    )


def reader_table(rounds: Sequence[dict[str, Any]], datasets: dict[str, Any]) -> list[str]:
    lines = [
        "| variant | dataset | fields read | images/s median (range) | x image-class, paired "
        "median (range) | CPU ms/image | images per CPU s, x image-class |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    rows = [("current", v) for v in VARIANTS] + [("before", "image-class")]
    base_cpu = _cpu_ms(rounds, "current", BASELINE)
    for side, variant in rows:
        epochs = _epochs(rounds, side, variant)
        if not epochs:
            continue
        rates = [_rate(e) for e in epochs]
        cpu = _cpu_ms(rounds, side, variant)
        name = BEFORE if side == "before" else variant
        ratio = (
            "1"
            if (side, variant) == ("current", BASELINE)
            else _spread(_paired(rounds, variant, side), 3)
        )
        data = datasets["fields" if variant == "fields-pad" else variant]
        fields = {
            "image-class": "default (jpg, cls)",
            "fields": ", ".join(FIELDS),
            "fields-pad": ", ".join(FIELDS) + "; pad=True",
            "fields-zstd": ", ".join(ZSTD_FIELDS),
        }[variant]
        lines.append(
            f"| {name} | v{data['version']}, {data['bytes'] / 2**20:,.0f} MiB | {fields} | "
            f"{_spread(rates)} | {ratio} | {cpu:.3f} | {base_cpu / cpu:.3f} |"
        )
    return lines


def build_table(found: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| list | fields | samples/s median (range) | shards, MiB | x path+label, paired median "
        "(range) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    by_kind = {k: [f for f in found if f["kind"] == k] for k in ("plain", "extra")}
    plain = {f["round"]: f["samples"] / f["seconds"] for f in by_kind["plain"]}
    for kind, label in (("plain", "path, label"), ("extra", "path, label, txt, labels, meta")):
        runs = by_kind[kind]
        if not runs:
            continue
        rates = [f["samples"] / f["seconds"] for f in runs]
        ratios = [f["samples"] / f["seconds"] / plain[f["round"]] for f in runs]
        shown = "1" if kind == "plain" else _spread(ratios, 3)
        lines.append(
            f"| {label} | {', '.join(runs[0]['fields'])} | {_spread(rates)} | "
            f"{runs[0]['shards']}, {runs[0]['bytes'] / 2**20:,.0f} | {shown} |"
        )
    return lines


def _ratio_of_medians(a: Sequence[float], b: Sequence[float]) -> float:
    return statistics.median(a) / statistics.median(b)


TARGET_RATIO = 0.9  # the multi-field target: at least 0.9x image + class


WITHIN_5_PERCENT = 0.95


def summary_lines(results: dict[str, Any]) -> list[str]:
    """The targets, as measured (the page's reading is written from these)."""
    lines = ["| target | measured | |", "| --- | --- | --- |"]
    rounds = results.get("reader", [])
    if rounds:
        paired = _paired(rounds, "fields")
        ratio = statistics.median(paired)
        cpu = _cpu_ms(rounds, "current", BASELINE) / _cpu_ms(rounds, "current", "fields")
        lines.append(
            f"| reader: image + caption + labels >= 0.9x image + class | {ratio:.3f}x "
            f"(paired median of {len(paired)} epoch pairs; range {min(paired):.3f}-"
            f"{max(paired):.3f}); images per CPU second {cpu:.3f}x | "
            f"{'met' if ratio >= TARGET_RATIO else 'missed'} |"
        )
        # current over before: the inverse of the table's before-over-current ratios
        before = [1 / x for x in _paired(rounds, "image-class", "before")]
        if before:
            ratio = statistics.median(before)
            cpu = _cpu_ms(rounds, "before", BASELINE) / _cpu_ms(rounds, "current", BASELINE)
            lines.append(
                f"| reader: image + class as fast as before | current {ratio:.3f}x the older "
                f"commit (median of {len(before)} per-round ratios; range {min(before):.3f}-"
                f"{max(before):.3f}); images per CPU second {cpu:.3f}x | "
                f"{'within 5%' if ratio >= WITHIN_5_PERCENT else 'slower'} |"
            )
    found = results.get("build", [])
    if found:
        plain = {f["round"]: f["samples"] / f["seconds"] for f in found if f["kind"] == "plain"}
        ratios = [
            f["samples"] / f["seconds"] / plain[f["round"]] for f in found if f["kind"] == "extra"
        ]
        ratio = statistics.median(ratios)
        lines.append(
            f"| build: 3 extra columns >= 0.9x path + label | {ratio:.3f}x (paired median of "
            f"{len(ratios)} rounds; range {min(ratios):.3f}-{max(ratios):.3f}) | "
            f"{'met' if ratio >= TARGET_RATIO else 'missed'} |"
        )
    return lines


def _before_rounds(rounds: Sequence[dict[str, Any]]) -> list[str]:
    """Each round's current image-class median over the older commit's, with its load."""
    ratios = [1 / x for x in _paired(rounds, "image-class", "before")]
    if not ratios:
        return []
    shown = [
        f"round {r['round']} {x:.3f} (load {r['current']['load_before'].split(',')[0]})"
        for r, x in zip(rounds, ratios, strict=True)
    ]
    return ["Current image-class over the older commit's, per round: " + "; ".join(shown) + ".", ""]


def report(results: dict[str, Any]) -> str:
    args = results["args"]
    datasets = results["datasets"]
    before = f"; `--before`: `{args['before']}` at `{results['before_commit']}`"
    end = results.get("commit_end", results["commit"])
    ended = f" at the start, `{end}` at the end" if end != results["commit"] else ""
    loads = [
        f"round {r['round']} {side}: {r[side]['load_before']} -> {r[side]['load_after']}"
        for r in results.get("reader", [])
        for side in ("current", "before")
        if side in r
    ]
    lines = [
        "# Multi-field samples: reader and build speed against image + class",
        "",
        f"Measured {results['date']} on one shared machine, with "
        f"`benchmarks/fields/fields_bench.py` "
        "(see `README.md`). Command:",
        "",
        f"    {results['command']}",
        "",
        f"Machine: `{json.dumps(results['machine'])}`",
        f"Versions: `{json.dumps(results['versions'])}`",
        f"fastpack: `{results['commit']}`{ended}" + (before if args["before"] else ""),
        f"Corpus: `{json.dumps(results['corpus'])}`",
        f"Load average (1, 5, 15 min): start `{results['load_start']}`, end "
        f"`{results['load_end']}`.",
        "",
        "## Targets",
        "",
        *summary_lines(results),
        "",
    ]
    if results.get("reader"):
        rows = datasets["image-class"]["samples"]
        lines += [
            "## Reader",
            "",
            f"`Dataset(path, transform=RandomResizedCrop({args['size']}), fields=...)` + "
            f"`make_loader(batch_size={args['batch_size']}, num_workers={args['workers']})` "
            "(persistent workers, shuffled, page cache warm). Every dataset holds the same "
            f"{rows:,} samples: the corpus's images listed {args['repeat']} times in a JSONL "
            "list file; the `fields` lists add a COCO-like caption (`txt`, ~50 characters, "
            "`benchmarks/fields/_captions.py`) and 1-5 class ids of 80 (`labels` -> `labels.json`, "
            "class_ids) per image. One process per round holds one loader per variant and, "
            f"after a warm-up epoch each, runs {args['epochs']} cycles of one epoch of every "
            "variant (order reversed every other cycle); the `before` variant runs in its own "
            "process in the same round (order of the two processes swapped every round). "
            f"{args['rounds']} rounds. images/s: median (range) over every timed epoch. Paired "
            "ratio: each epoch over the `image-class` epoch of the same cycle (`before`: each "
            "round's median over the same round's `image-class` median), median (range). CPU "
            "ms/image: CPU time of the process and its workers per image, median over epochs; "
            "it moves much less than images/s when other work shares the machine.",
            "",
            *reader_table(results["reader"], datasets),
            "",
            *_before_rounds(results["reader"]),
            "Load average before -> after each process: " + "; ".join(loads) + ".",
            "",
        ]
    if results.get("build"):
        samples = results["build"][0]["samples"]
        lines += [
            "## Build",
            "",
            f"`fastpack.build(list.jsonl, out, BuildOptions(workers={args['workers']}, "
            f"shard_size=16 MiB))`, JPEGs kept as they are, {samples:,} samples (the corpus's "
            f"images listed {args['build_repeat']} times), output under `{args['workdir']}`. The "
            "extra columns: `txt` (COCO-like caption, text), `labels` (1-5 class ids, "
            "class_ids), `meta` (a COCO-like `images` entry, ~330 bytes of JSON, json); types "
            "inferred from the list. One untimed pair, then "
            f"{args['build_rounds']} pairs in one process, strictly alternating (A B A B); the "
            "output is removed and `sync`ed before each build. samples/s from the call to its "
            "return (planning, shard jobs, index, manifest); paired ratio: each pair's "
            "`extra` over its `plain`.",
            "",
            *build_table(results["build"]),
            "",
            "Load average before each build: "
            + "; ".join(f"{f['kind']} {f['round']}: {f['load_before']}" for f in results["build"])
            + ".",
            "",
        ]
    if results.get("profile"):
        lines += profile_lines(results["profile"], args)
    reading = results.get("reading")
    if reading is not None:
        reading += (
            "\n\n(Written after the run, put in with `python -m "
            "benchmarks.fields.fields_bench --render "
            f"{args['workdir']}/results.json --reading FILE`.)"
        )
    lines += ["## Reading", "", reading or "(written after the run)", ""]
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------


def _git_commit(root: Path) -> str:
    """HEAD, and whether any tracked file differs from it (`sysinfo.fastpack_commit`)."""
    return _sysinfo.fastpack_commit(root)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, help="ImageFolder root (required to measure)")
    parser.add_argument("--before", type=Path, help="checkout of an older commit (reader only)")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--build-repeat", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--build-rounds", type=int, default=10)
    parser.add_argument("--profile-rounds", type=int, default=3)
    parser.add_argument("--profile-top", type=int, default=15)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-fields"))
    parser.add_argument("--timeout", type=int, default=1200)
    parser.add_argument("--reading", type=Path, help="a paragraph to put under 'Reading'")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/fields/FIELDS.md"))
    parser.add_argument("--render", type=Path, help="only render this results.json to --out")
    args = parser.parse_args(argv)
    args.parts = [p for p in args.parts.split(",") if p]
    args.variants = [v for v in args.variants.split(",") if v]
    unknown = set(args.parts) - set(PARTS) | set(args.variants) - set(VARIANTS)
    if args.corpus is None and args.render is None:
        parser.error("--corpus is required (or --render)")
    if unknown or BASELINE not in args.variants:
        parser.error(f"unknown parts or variants {sorted(unknown)}, or no {BASELINE}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.render is not None:
        saved = json.loads(args.render.read_text())
        if args.reading is not None:
            saved["reading"] = args.reading.read_text(encoding="utf-8").strip()
        args.out.write_text(report(saved), encoding="utf-8")
        return
    args.workdir = args.workdir.resolve()
    if args.before is not None:
        args.before = args.before.resolve()
    logs = args.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    shown = " ".join(sys.argv[1:]) if argv is None else " ".join(argv)
    results: dict[str, Any] = {
        "command": f"python -m benchmarks.fields.fields_bench {shown}",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _sysinfo.machine(),
        "versions": {k: v for k, v in _sysinfo.versions().items() if v != "not installed"},
        "commit": _sysinfo.fastpack_commit(REPO),
        "before_commit": _git_commit(args.before) if args.before else None,
        "corpus": _sysinfo.corpus(args.corpus),
        "load_start": _sysinfo.load(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }

    results["versions"]["zstandard"] = zstandard.__version__
    lists = write_lists(args.corpus, args.workdir / "lists", args.repeat, args.build_repeat)
    datasets = build_reader_datasets(lists, args.workdir / "data", args.workers)
    results["datasets"] = {k: describe_dataset(v) for k, v in datasets.items()}
    if "reader" in args.parts:
        results["reader"] = reader_rounds(datasets, args, logs)
    if "build" in args.parts:
        results["build"] = build_rounds(lists, args)
    if "profile" in args.parts:
        results["profile"] = profile_build(lists, args)
    results["load_end"] = _sysinfo.load()
    results["commit_end"] = _sysinfo.fastpack_commit(REPO)
    if args.reading is not None:
        results["reading"] = args.reading.read_text(encoding="utf-8").strip()
    (args.workdir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    text = report(results)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
