"""The Markdown page of `startup_bench` (`STARTUP.md`) from its raw results."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

MIB = 1024  # values are KiB
TARGET_S = 1.0
TARGET_GROWTH_MIB = 16e6 / 2**20  # 16 MB
HOT_BYTES_PER_SAMPLE = 4 + 8 + 8 + 8  # shard, label, jpg.offset, jpg.size: what a read touches


def _samples(n: int | str) -> str:
    n = int(n)
    for unit, name in ((1_000_000, "M"), (1_000, "k")):
        if n >= unit and n % unit == 0:
            return f"{n // unit:,}{name}"
    return f"{n:,}"


def _spread(values: Sequence[float], scale: float = 1.0, digits: int = 1) -> str:
    """`median (min-max)` of `values` / `scale`."""
    v = [x / scale for x in values]
    med = statistics.median(v)
    if len(v) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({min(v):.{digits}f}-{max(v):.{digits}f})"


def _med(values: Sequence[float]) -> float:
    return statistics.median(values)


def _header(results: dict[str, Any]) -> list[str]:
    parts = [p for p in ("startup", "costs", "memory", "peers") if p in results]
    first = results[parts[0]]["meta"]
    machine, versions = first["machine"], first["versions"]
    shown = ("torch", "numpy", "simplejpeg", "opencv-python-headless", "webdataset")
    runs = []
    for part in parts:
        info = results[part]["meta"]
        runs.append(
            f"  - {part}: `{info['command']}` ({info['python']}), {info['date']}; load "
            f"{info['load_before']} / {info['load_after']}; fastpack {info['fastpack_commit']}"
        )
    return [
        "# Start-up and worker memory of the map-style reader",
        "",
        f"- Machine: {machine['cpu']}, {machine['cores']} cores, {machine['ram_gib']} GiB RAM, "
        f"Linux {machine['kernel']}, Python {machine['python']}; shared with other benchmarks.",
        "- Versions: " + ", ".join(f"{k} {versions[k]}" for k in shown if k in versions) + ".",
        "- Parts (command, date, load average over 1, 5, 15 min before / after, fastpack sources):",
        *runs,
        "- Raw numbers: `startup_results.json` beside this page (the run's results.json).",
        "",
    ]


def _datasets(results: dict[str, Any]) -> list[str]:
    sets = results.get("datasets", {})
    if not sets:
        return []
    base = next(iter(sets.values()))["base_samples"]
    return [
        "Datasets: one real dataset built by `fastpack.compiler.build` (default options) from "
        f"{base:,} photos, and synthetic datasets of N samples that repeat it "
        "(`benchmarks/startup/_index.py`): sample i is the real sample i mod "
        f"{base:,} under its own key, each repetition of the real shard is a shard of its own "
        "(a symbolic link to the real tar), so the manifest lists about N / "
        f"{base:,} shards, as a real dataset of N samples with {base:,} per shard would. "
        "The index and manifest are written by `IndexWriter` and `write_manifest`.",
        "",
    ]


def _startup(results: dict[str, Any]) -> list[str]:
    data, sets = results["startup"]["data"], results.get("datasets", {})
    lines = [
        "## Start-up",
        "",
        "Wall time from `Dataset(path, transform=RandomResizedCrop(224))` through "
        "`make_loader(ds, batch_size=64, num_workers=2)` to the first batch "
        "(`next(iter(loader))`), each run in a fresh process with every import done before the "
        "clock starts, page cache warm (manifest, index and shard files read just before). "
        "Sizes interleaved, runs per size as counted. Seconds; phases are medians.",
        "",
        "| samples | shards | index MB | manifest KB | runs | start-up s, median (range) "
        "| `Dataset()` | `make_loader()` | `iter()` | first `next()` |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for n, runs in data.items():
        info = sets.get(n, {})
        phase = {k: _med([r[k] for r in runs]) for k in runs[0] if k.endswith("_s")}
        lines.append(
            f"| {_samples(n)} | {info.get('shards', '?'):,} | "
            f"{info.get('index_bytes', 0) / 1e6:,.1f} | {info.get('manifest_bytes', 0) / 1e3:,.1f}"
            f" | {len(runs)} | {_spread([r['startup_s'] for r in runs], digits=3)} | "
            f"{phase['dataset_s']:.3f} | {phase['make_loader_s']:.4f} | {phase['iter_s']:.3f} | "
            f"{phase['first_batch_s']:.3f} |"
        )
    largest = max(data, key=int)
    times = [r["startup_s"] for r in data[largest]]
    verdict = "met" if _med(times) < TARGET_S else "NOT met"
    lines += [
        "",
        f"Target, under {TARGET_S:.0f} s at {_samples(largest)} samples: **{verdict}** "
        f"(median {_med(times):.3f} s, slowest run {max(times):.3f} s).",
        "",
    ]
    return lines


STEPS: tuple[tuple[str, str], ...] = (
    ("read_manifest", "`read_manifest` (fastpack.json), repeated calls"),
    ("dataset", "`Dataset(...)`: manifest, index, checks"),
    ("open_index", "of which `Index` (index.fpx, memory-mapped)"),
    ("make_loader", "`make_loader(...)`"),
    ("permutation", "whole epoch order of N (`EpochBatchSampler.order`, not on the start-up path)"),
    ("first_indices", "first batch's indices (`next(iter(sampler))`)"),
    ("fork_workers", "`iter()` with one prepared batch: start of the 2 workers"),
    ("decode_first_batch", "first batch read in one process (64 crops, shards opened)"),
    ("index_release", "alternative: `madvise(MADV_DONTNEED)` over the whole index map"),
)


def _costs(results: dict[str, Any]) -> list[str]:
    data = results["costs"]["data"]
    sizes = list(data)
    lines = [
        "## Where the start-up time goes",
        "",
        "Each piece of the start-up path timed on its own, in one fresh process per size "
        "(median of 5 calls, ms). The first `read_manifest` of a process is one call, timed "
        "before anything else; `gc.callbacks` times the full (generation 2) garbage "
        "collections inside it.",
        "",
        "| step | " + " | ".join(_samples(n) for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    first = [data[n]["first_read_manifest"] for n in sizes]
    lines.append(
        "| first `read_manifest` in a fresh process | "
        + " | ".join(f"{f['seconds'] * 1e3:.1f}" for f in first)
        + " |"
    )
    lines.append(
        "| of which full garbage collections | "
        + " | ".join(f"{f['full_gc_s'] * 1e3:.1f} ({f['full_gcs']})" for f in first)
        + " |"
    )
    for key, label in STEPS:
        cells = [data[n]["steps"][key]["median"] * 1e3 for n in sizes]
        lines.append(f"| {label} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    faults = [data[n].get("fault_kib", []) for n in sizes]
    lines.append(
        "| KiB mapped by reading 1 byte of the index (5 random offsets) | "
        + " | ".join(" ".join(str(k) for k in f) for f in faults)
        + " |"
    )
    lines += ["", *_cost_notes(results), ""]
    return lines


def _cost_notes(results: dict[str, Any]) -> list[str]:
    costs = results["costs"]["data"]
    largest = max(costs, key=int)
    step = {k: v["median"] for k, v in costs[largest]["steps"].items()}
    first = costs[largest]["first_read_manifest"]
    notes = []
    if "startup" in results and largest in results["startup"]["data"]:
        runs = results["startup"]["data"][largest]
        total = _med([r["startup_s"] for r in runs])
        iter_s = _med([r["iter_s"] for r in runs])
        notes.append(
            f"- At {_samples(largest)} samples `iter()` takes {iter_s * 1e3:.0f} ms of the "
            f"{total * 1e3:.0f} ms start-up, of which the workers' start "
            f"({step['fork_workers'] * 1e3:.0f} ms). The first batch's indices cost "
            f"{step['first_indices'] * 1e3:.2f} ms at any N: `EpochBatchSampler` evaluates a "
            "keyed permutation at the batch's positions "
            "(`reader/order/permutation.py`) instead of "
            "building the epoch's order, which would cost "
            + ", ".join(
                f"{c['steps']['permutation']['median'] * 1e3:.1f} ms at {_samples(n)}"
                for n, c in costs.items()
            )
            + " (the `order` row)."
        )
    notes.append(
        f"- `Dataset()` at {_samples(largest)}: the manifest lists "
        f"{costs[largest]['shards']:,} shards ({costs[largest]['manifest_bytes'] / 1e3:,.0f} KB "
        f"of JSON). Its first parse in a process took {first['seconds'] * 1e3:.0f} ms, of which "
        f"{first['full_gc_s'] * 1e3:.0f} ms in {first['full_gcs']} full garbage collection(s) "
        "over the objects torch's import left; later parses take "
        f"{step['read_manifest'] * 1e3:.0f} ms. Opening the index is O(1) at every size."
    )
    notes.append(
        f"- The first batch itself ({step['decode_first_batch'] * 1e3:.0f} ms for 64 crops in "
        "one process) and the workers' start do not depend on N."
    )
    return notes


def _mem_rows(runs: list[dict[str, Any]]) -> dict[int, dict[str, list[float]]]:
    """Per checkpoint, each measure over all runs and workers (KiB)."""
    rows: dict[int, dict[str, list[float]]] = {}
    for run in runs:
        for point in run["points"]:
            row = rows.setdefault(point["batches"], {})
            for w in point["workers"]:
                for key in ("private", "uss", "uss_index", "rss_index", "Rss", "Pss"):
                    row.setdefault(key, []).append(w.get(key, 0))
            trainer = point["trainer"]
            row.setdefault("trainer_private", []).append(trainer["private"])
            row.setdefault("trainer_anon", []).append(trainer.get("uss_anonymous", 0))
    return rows


MEM_COLUMNS: tuple[tuple[str, str], ...] = (
    ("private", "worker private (Private_Clean + Private_Dirty)"),
    ("uss", "worker USS"),
    ("uss_index", "of which index pages"),
    ("rss_index", "worker RSS of the index map"),
    ("Rss", "worker RSS"),
    ("Pss", "worker PSS"),
    ("trainer_private", "trainer private"),
    ("trainer_anon", "trainer anonymous private"),
)


def _mem_table(per_size: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = [
        "| samples | batches | " + " | ".join(label for _, label in MEM_COLUMNS) + " |",
        "|---:|---:|" + "---|" * len(MEM_COLUMNS),
    ]
    for n, runs in per_size.items():
        for batches, row in sorted(_mem_rows(runs).items()):
            cells = [_spread(row[key], MIB) for key, _ in MEM_COLUMNS]
            lines.append(f"| {_samples(n)} | {batches} | " + " | ".join(cells) + " |")
    return lines


def _growth(per_size: dict[str, list[dict[str, Any]]]) -> tuple[list[str], dict[int, float]]:
    small, large = min(per_size, key=int), max(per_size, key=int)
    rows_small, rows_large = _mem_rows(per_size[small]), _mem_rows(per_size[large])
    keys = ("private", "rss_index", "Pss", "trainer_private", "trainer_anon")
    lines = [
        f"| batches | {_samples(large)} minus {_samples(small)}: worker private | "
        "worker index RSS | worker PSS | trainer private | trainer anonymous private |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    private_growth = {}
    for batches in sorted(rows_large):
        if batches not in rows_small:
            continue
        diffs = {
            k: (_med(rows_large[batches][k]) - _med(rows_small[batches][k])) / MIB for k in keys
        }
        private_growth[batches] = diffs["private"]
        lines.append(f"| {batches} | " + " | ".join(f"{diffs[k]:+.1f}" for k in keys) + " |")
    return lines, private_growth


def _memory(results: dict[str, Any]) -> list[str]:
    data = results["memory"]["data"]
    two = data["2"]
    runs = len(next(iter(two.values())))
    lines = [
        "## Worker memory",
        "",
        "After reading the first 20, 60 and 120 batches (of 64), with the batches the "
        "workers had fetched ahead finished (their CPU time idle for 0.5 s), from "
        "`/proc/<pid>/smaps_rollup` (private = Private_Clean + Private_Dirty, RSS, PSS) and "
        "`/proc/<pid>/smaps` (USS: the same private sum mapping by mapping, which also says "
        "what it belongs to). MiB; median (range) over "
        f"the 2 workers of {runs} runs. The trainer is the process that iterates the loader.",
        "",
        "### Two workers (the `make_loader` call above)",
        "",
        *_mem_table(two),
        "",
    ]
    growth, private_growth = _growth(two)
    verdicts = ", ".join(
        f"{'met' if grew < TARGET_GROWTH_MIB else 'NOT met'} after {b} batches ({grew:+.1f})"
        for b, grew in private_growth.items()
    )
    lines += [
        "Growth from the smallest to the largest dataset, difference of the medians (MiB). "
        "The trainer's private memory also counts the shared-memory blocks of the batches it "
        "holds at that moment (about 9 MiB each), hence its jumps; its anonymous part does not.",
        "",
        *growth,
        "",
        f"Target, worker private memory grows by less than 16 MB ({TARGET_GROWTH_MIB:.1f} MiB): "
        f"**{verdicts}**. Pages that both workers map count as shared, not private (see "
        "below): the index RSS and PSS columns and the one-worker table show what this "
        "measure alone could miss.",
        "",
    ]
    if data.get("1"):
        one_growth, _ = _growth(data["1"])
        lines += [
            "### One worker (one run)",
            "",
            *_mem_table(data["1"]),
            "",
            *one_growth,
            "",
        ]
    lines += _memory_notes(results)
    return lines


def _memory_notes(results: dict[str, Any]) -> list[str]:
    data = results["memory"]["data"]
    two = data["2"]
    large = max(two, key=int)
    rows = _mem_rows(two[large])
    first = min(rows)
    index_rss = _med(rows[first]["rss_index"]) / MIB
    hot = int(large) * HOT_BYTES_PER_SAMPLE / 2**20
    notes = [
        "What the numbers say:",
        "",
        f"- Each sample a worker reads touches four index sections: `shard`, `label`, "
        "`jpg.offset`, `jpg.size` (`Dataset._payload` -> `Index.locate`, and "
        "`labels[rows]`), "
        f"{HOT_BYTES_PER_SAMPLE} bytes per sample, {hot:,.0f} MiB at {_samples(large)}. A page "
        "fault on the memory-mapped index maps far more than the entry read: 64 KiB "
        "(fault-around) to 2 MiB (a whole large page-cache folio) here (row 'KiB mapped by "
        "reading 1 byte' above). Left alone, a worker would soon map most of those pages. "
        "The reader unmaps them (`Index.release`, `madvise(MADV_DONTNEED)`) once per 64 "
        "samples, as it unmaps the shards' pages after each sample (`ShardReader.release`): "
        f"after {first} batches a worker maps {index_rss:,.1f} MiB of the {_samples(large)} "
        "index.",
        "- Two workers map the same index and shard pages, so the kernel would count those as "
        "shared, not private: the private sum (the 16 MB target's measure) would hide them, "
        "while RSS and PSS show them. The one-worker table, where they would all be private, "
        "and the RSS and PSS columns of both tables show what grows.",
    ]
    if "1" in data and large in data["1"]:
        small = min(data["1"], key=int)
        one_large = _mem_rows(data["1"][large])
        one_small = _mem_rows(data["1"][small])
        b = min(one_large)
        grew = (_med(one_large[b]["private"]) - _med(one_small[b]["private"])) / MIB
        notes[-1] = notes[-1][:-1] + f" (one worker: +{grew:,.1f} MiB private after {b} batches)."
    trainer = (_med(rows[first]["trainer_anon"])) / MIB
    small_rows = _mem_rows(two[min(two, key=int)])
    trainer_small = _med(small_rows[first]["trainer_anon"]) / MIB
    notes.append(
        f"- The trainer's anonymous private memory is {trainer:,.0f} MiB at {_samples(large)} "
        f"against {trainer_small:,.0f} MiB at {_samples(min(two, key=int))}: the sampler no "
        f"longer holds the epoch's order ({int(large) * 8 / 2**20:,.1f} MiB of int64 at this "
        "size) but evaluates a keyed permutation per batch (see below)."
    )
    return [*notes, ""]


def _fixes(results: dict[str, Any]) -> list[str]:
    """The costs the measurements point to, what was done about each, and what is left."""
    if "costs" not in results:
        return []
    costs = results["costs"]["data"]
    large = max(costs, key=int)
    step = {k: v["median"] * 1e3 for k, v in costs[large]["steps"].items()}
    first = costs[large]["first_read_manifest"]
    return [
        "## Costs found, and what was done",
        "",
        "1. **Index pages in the workers**: done. `Index.release()` (`formats/index.py`) "
        "unmaps the index's pages from the process, and `Dataset` calls it once per 64 samples "
        "read (`reader/map_style/dataset.py`). "
        f"It costs {step['index_release']:.2f} ms per call at "
        f"{_samples(large)}, against {step['decode_first_batch']:.0f} ms to decode a batch.",
        "2. **The first manifest parse**: done. `manifest_from_text` (`formats/manifest.py`) "
        "keeps the garbage collector paused while it builds the manifest's objects, which "
        "otherwise started a full collection over everything torch's import left. This "
        f"run: {first['seconds'] * 1e3:.0f} ms for the first parse at {_samples(large)}, "
        f"{first['full_gcs']} full collection(s).",
        "3. **The permutation**: done. `EpochBatchSampler` used to build the epoch's order "
        "(`default_rng((seed, epoch)).permutation(N)`) in the trainer before the first batch: "
        "288 ms at 10M when last measured (commit cf139d4), linear in N, and "
        f"{int(large) * 8 / 2**20:,.0f} MiB of int64 held all epoch. It now "
        "evaluates a keyed bijection of [0, N) (a six-round Feistel network with "
        "cycle-walking, keyed by (seed, epoch); `reader/order/permutation.py`) "
        "at each batch's "
        f"positions: {step['first_indices']:.2f} ms for the first batch and no memory that "
        "grows with N.",
        "",
    ]


def _command(results: dict[str, Any], part: str) -> str | None:
    """The command line of the run that measured `part` (None: not measured)."""
    meta: dict[str, Any] = results.get(part, {}).get("meta", {})
    return meta.get("command")


def _peers(results: dict[str, Any]) -> list[str]:
    peers = results["peers"]["data"]
    n = peers["samples"]
    rows = list(peers["rows"])
    fastpack = results.get("startup", {}).get("data", {}).get(str(n))
    same_run = _command(results, "peers") == _command(results, "startup")
    if fastpack and same_run:  # seconds of two runs are not set side by side
        seconds = [r["startup_s"] for r in fastpack]
        what = f"fastpack, {_samples(n)} samples (table above)"
        rows.insert(0, {"what": what, "seconds": seconds})
    lines = [
        f"## Peers at {_samples(n)} samples",
        "",
        "Start-up to the first batch of 64 at 224x224, 2 workers, each run a fresh process with "
        "the peer's imports done before the clock starts (`benchmarks/startup/peer_startup.py`, "
        "peers as in `../readers/RESULTS.md`). The datasets repeat the corpus: "
        "webdataset and DALI list the "
        "corpus's tars (and DALI their indexes) again and again (symbolic links); LitData and "
        "Mosaic list their chunks (shards) again and again, in an `index.json` of that many "
        "entries; ImageFolder is a tree of 1,000 class folders of hard links to its JPEGs "
        "(regular files), dentries cached (walked once before each run). The listing rows "
        "time only the part of the ImageFolder start-up that grows with the number of files: "
        "the peer lists as torchvision's `ImageFolder` does "
        "(`imagefolder_peer.list_like_torchvision`); the `pathlib` row is the listing the peer "
        "used before, for comparison. Seconds; memory is the listing process's RSS growth. FFCV "
        "is not here: its dataset is one `.beton` file that cannot be repeated by links, and "
        "writing 1M samples through its re-encoding writer would take about 25 minutes here; "
        "its start-up at 3,000 samples (`../readers/RESULTS.md`) is mostly numba "
        "compiling its pipeline, "
        "which more samples cannot shorten.",
        "",
        "| what | runs | seconds, median (range) | RSS growth MiB |",
        "|---|---:|---|---:|",
    ]
    if fastpack and not same_run:
        date = results["peers"]["meta"].get("date", "?")
        lines[2:2] = [
            f"The peers were measured in another run ({date}, its load and commit above) than "
            "fastpack's start-up: fastpack is not set beside them, as seconds of two runs on a "
            "shared machine do not compare.",
            "",
        ]
    for row in rows:
        growth = row.get("rss_growth_kib")
        cell = f"{_med(growth) / MIB:,.0f}" if growth else ""
        lines.append(
            f"| {row['what']} | {len(row['seconds'])} | {_spread(row['seconds'], digits=3)} "
            f"| {cell} |"
        )
    return [*lines, ""]


SECTIONS: tuple[tuple[str, Callable[[dict[str, Any]], list[str]]], ...] = (
    ("startup", _startup),
    ("costs", _costs),
    ("memory", _memory),
    ("fixes", _fixes),
    ("peers", _peers),
)


def render(results: dict[str, Any]) -> str:
    lines = [*_header(results), *_datasets(results)]
    for part, section in SECTIONS:
        if part in results or part == "fixes":
            lines += section(results)
    return "\n".join(lines).rstrip() + "\n"
