"""Markdown tables of `build_scale_results.json`: `python -m benchmarks.builds.scale_report
[RESULTS]` prints them (medians over runs; ranges where there are several).

A process's peak RSS is the higher of the sampled VmRSS and the kernel's VmHWM (which also sees
peaks between samples); its peak anonymous memory is the highest RssAnon sampled.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

Run = dict[str, Any]
Process = dict[str, Any]
DEFAULT = Path(__file__).with_name("build_scale_results.json")
PHASES = ("before", "during", "after")  # of the build process: planning, shard jobs, the end
KINDS = ("rss", "anon")


_SPREAD_VALUES = 2  # values needed for a range


def _spread(values: Sequence[float], digits: int = 1) -> str:
    middle = f"{statistics.median(values):,.{digits}f}"
    if len(values) < _SPREAD_VALUES:
        return middle
    return f"{middle} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def _peak(process: Process, kind: str) -> float:
    if kind == "rss":
        return float(max(process["peak_rss_mib"], process["vm_hwm_mib"]))
    return float(process["peak_anon_mib"])


def _role(run: Run, *, role: str, kind: str = "anon") -> float | None:
    """The highest peak among the processes of `role`; None where there is none."""
    peaks = [_peak(p, kind) for p in run["processes"] if p["role"] == role]
    return max(peaks) if peaks else None


def _largest(run: Run, kind: str) -> float:
    return max(_peak(p, kind) for p in run["processes"])


def _largest_role(run: Run, kind: str) -> str:
    return str(max(run["processes"], key=lambda p: _peak(p, kind))["role"])


def _median_of(runs: list[Run], pick: Callable[[Run], float | None], digits: int = 1) -> str:
    values = [v for v in (pick(r) for r in runs) if v is not None]
    return f"{statistics.median(values):,.{digits}f}" if values else "-"


def _groups(runs: list[Run], mode: str) -> dict[int, list[Run]]:
    found: dict[int, list[Run]] = {}
    for run in runs:
        if run["mode"] == mode and not run.get("shard_size"):
            found.setdefault(run["n"], []).append(run)
    return dict(sorted(found.items()))


def _phase(run: Run, *, phase: str) -> float | None:
    build = next(p for p in run["processes"] if p["role"] == "build")
    value = build["phase_peak_anon_mib"].get(phase)
    return None if value is None else float(value)


def _index_mb(run: Run) -> float | None:
    parts = run.get("output_parts")
    return None if parts is None else parts["index"] / 1e6


_SMALL_BUILD = 10_000  # images: up to this many, the index's MB are shown with a decimal


def _index_of(group: list[Run], runs: list[Run]) -> str:
    """The index's size in MB, from a run of another mode with the same output bytes if need be."""
    found = [r for r in group if r.get("output_parts")] or [
        r for r in runs if r["output_bytes"] == group[0]["output_bytes"] and r.get("output_parts")
    ]
    return _median_of(found, _index_mb, 1 if group[0]["n"] <= _SMALL_BUILD else 0)


def _both(group: list[Run], role: str) -> str:
    return " / ".join(_median_of(group, partial(_role, role=role, kind=k)) for k in KINDS)


def scale_table(runs: list[Run]) -> str:
    lines = [
        "| N | shards | runs | wall s | images/s | images/s (summary) | largest peak RSS MiB "
        "| largest peak anon MiB | build peak RSS / anon MiB | build peak anon MiB: plan / "
        "shards / end | worker peak RSS / anon MiB | index MB | output GB |",
        "|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for n, group in _groups(runs, "local").items():
        first = group[0]
        phases = " / ".join(_median_of(group, partial(_phase, phase=p)) for p in PHASES)
        largest = [
            f"{_median_of(group, partial(_largest, kind=k))} ({_largest_role(first, k)})"
            for k in KINDS
        ]
        lines.append(
            f"| {n:,} | {first['summary'].get('shards', '?')} | {len(group)} "
            f"| {_spread([r['wall_s'] for r in group])} "
            f"| {_spread([r['images_per_s'] for r in group], 0)} "
            f"| {_median_of(group, lambda r: r['summary'].get('inputs_per_s'), 0)} "
            f"| {largest[0]} | {largest[1]} | {_both(group, 'build')} | {phases} "
            f"| {_both(group, 'worker')} | {_index_of(group, runs)} "
            f"| {first['output_bytes'] / 1e9:.2f} |"
        )
    return "\n".join(lines)


def dask_table(runs: list[Run]) -> str:
    lines = [
        "| N | mode | runs | wall s | images/s | build or client peak RSS / anon MiB | worker "
        "peak RSS / anon MiB | scheduler peak RSS / anon MiB | largest peak RSS MiB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    local, dask = _groups(runs, "local"), _groups(runs, "dask")
    for n in sorted(set(local) & set(dask)):
        for mode, group in (("local", local[n]), ("Dask", dask[n])):
            head, worker = ("client", "dask-worker") if mode == "Dask" else ("build", "worker")
            largest = f"{_median_of(group, partial(_largest, kind='rss'))}"
            lines.append(
                f"| {n:,} | {mode}, {group[0]['workers']} workers | {len(group)} "
                f"| {_spread([r['wall_s'] for r in group])} "
                f"| {_spread([r['images_per_s'] for r in group], 0)} | {_both(group, head)} "
                f"| {_both(group, worker)} | {_both(group, 'scheduler')} "
                f"| {largest} ({_largest_role(group[0], 'rss')}) |"
            )
    return "\n".join(lines)


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    runs = json.loads(path.read_text())["runs"]
    print(scale_table(runs))
    if any(r["mode"] == "dask" for r in runs):
        print()
        print(dask_table(runs))


if __name__ == "__main__":
    main()
