"""One measured build: `python -m fastpack build ...` as a subprocess, its process trees (and any
Dask processes) sampled by `MemoryWatch`, its wall time, summary line and output size."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.builds._scale_memory import MemoryWatch, ProcessPeaks

_SUMMARY = re.compile(
    r"([\d,]+) samples? from ([\d,]+) inputs? in ([\d,]+) shards? \((.*?)\) in ([\d.]+) s"
    r"(?: \(([\d,]+) inputs/s)?"
)


def build_command(
    source: Path, out: Path, *, workers: int, scheduler: str | None, shard_size: str | None
) -> list[str]:
    command = [sys.executable, "-m", "fastpack", "build", str(source), str(out), "--no-progress"]
    if shard_size is not None:
        command += ["--shard-size", shard_size]
    if scheduler is not None:
        return [*command, "--scheduler", scheduler]
    return [*command, "--workers", str(workers)]


def parse_summary(stdout: str) -> dict[str, Any]:
    """The numbers of the build's closing summary; `{"line": ...}` alone if it does not match."""
    line = next(
        (s for s in stdout.splitlines() if " samples from " in s or " sample from " in s), ""
    )
    found = _SUMMARY.search(line)
    if found is None:
        return {"line": line}
    rate = found.group(6)
    return {
        "line": line,
        "samples": int(found.group(1).replace(",", "")),
        "shards": int(found.group(3).replace(",", "")),
        "seconds": float(found.group(5)),
        "inputs_per_s": int(rate.replace(",", "")) if rate else None,
    }


def output_bytes(root: Path) -> dict[str, int]:
    """Bytes under `root`: in all, in shards (`.tar`), in DALI indexes (`.idx`), in the index
    (`index.fpx`), and the number of files."""
    sizes = {"total": 0, "tar": 0, "idx": 0, "index": 0, "files": 0}
    for directory, _, names in os.walk(root):
        for name in names:
            size = os.path.getsize(os.path.join(directory, name))
            kind = "index" if name == "index.fpx" else name.rpartition(".")[2]
            if kind in sizes:
                sizes[kind] += size
            sizes["total"] += size
            sizes["files"] += 1
    return sizes


def _largest(processes: list[ProcessPeaks], key: str) -> dict[str, Any]:
    top = max(processes, key=lambda p: getattr(p, key))
    return {"mib": round(getattr(top, key) / 1024, 1), "role": top.role, "pid": top.pid}


def by_role(processes: list[ProcessPeaks]) -> dict[str, dict[str, Any]]:
    """Per role: how many processes, and the highest peak RSS and anonymous memory among them."""
    roles: dict[str, dict[str, Any]] = {}
    for p in processes:
        entry = roles.setdefault(
            p.role, {"processes": 0, "peak_rss_mib": 0.0, "peak_anon_mib": 0.0}
        )
        entry["processes"] += 1
        entry["peak_rss_mib"] = max(entry["peak_rss_mib"], round(p.rss_kib / 1024, 1))
        entry["peak_anon_mib"] = max(entry["peak_anon_mib"], round(p.anon_kib / 1024, 1))
    return roles


def write_timeline(path: Path, watch: MemoryWatch) -> None:
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["s", "role", "pid", "rss_kib", "anon_kib"])
        writer.writerows(watch.timeline)


def measure_build(  # noqa: PLR0913 -- keyword inputs
    command: list[str],
    *,
    root_role: str,
    others: dict[int, str],
    interval: float,
    log: Path,
    timeout: float,
) -> dict[str, Any]:
    """Run `command`, sampling its tree (as `root_role`) and the trees of `others`."""
    with log.open("w") as err:
        began = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
        phase_role = "worker" if root_role == "build" else None
        watch = MemoryWatch({process.pid: root_role, **others}, interval, phase_role).start()
        try:
            stdout, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        finally:
            processes = watch.stop()
        wall = time.perf_counter() - began
    if process.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"build failed ({process.returncode}): {' | '.join(tail)}")
    write_timeline(log.with_suffix(".timeline.csv"), watch)
    return {
        "wall_s": round(wall, 2),
        "summary": parse_summary(stdout),
        "samples_taken": watch.samples,
        "largest_peak_rss": _largest(processes, "rss_kib"),
        "largest_peak_anon": _largest(processes, "anon_kib"),
        "largest_vm_hwm": _largest(processes, "hwm_kib"),
        "by_role": by_role(processes),
        "processes": [p.to_json() for p in sorted(processes, key=lambda p: p.first_seen_s)],
    }
