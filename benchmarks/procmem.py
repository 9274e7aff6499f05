"""The one /proc sampler of the benchmarks: a process's children and descendants, its CPU ticks, its
memory fields in KiB (`rollup_kib`: smaps_rollup, PSS and RSS; `status_kib`: /proc/<pid>/status,
VmRSS, RssAnon, VmHWM), and `TreeSampler`, the peak PSS and RSS of a process tree (DataLoader
workers, writer pools) over a run. Every memory function returns `dict[str, int]` of KiB, empty
once the process has gone."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_KIB = 1024  # KiB per MiB


def children(pid: int) -> list[int]:
    """The direct child processes of `pid` (none once it has gone)."""
    found: list[int] = []
    try:
        for task in (_PROC / str(pid) / "task").iterdir():
            found.extend(int(c) for c in (task / "children").read_text().split())
    except (FileNotFoundError, ProcessLookupError):
        return []
    return found


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, from /proc/<pid>/task/<tid>/children."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children(current))
    return found


def cpu_ticks(pids: Sequence[int]) -> int:
    """User + system clock ticks used so far by `pids` (/proc/<pid>/stat); a process that has
    gone counts 0."""
    total = 0
    for pid in pids:
        try:
            fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def _kib_fields(path: Path) -> dict[str, int]:
    """Every `Key: N kB` line of a /proc file, in KiB; empty once the process has gone."""
    try:
        text = path.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return {}
    found = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if rest.strip().endswith("kB"):
            found[key] = int(rest.split()[0])
    return found


def rollup_kib(pid: int | str) -> dict[str, int]:
    """Every KiB field of `/proc/<pid>/smaps_rollup` (Rss, Pss, Private_Dirty, ...); `pid` may
    be "self"."""
    return _kib_fields(_PROC / str(pid) / "smaps_rollup")


def status_kib(pid: int | str) -> dict[str, int]:
    """Every KiB field of `/proc/<pid>/status` (VmRSS, RssAnon, VmHWM, ...); `pid` may be
    "self". A zombie has no memory fields."""
    return _kib_fields(_PROC / str(pid) / "status")


@dataclass
class TreePeaks:
    pss_mib: float = 0.0  # highest sum of PSS over the tree at one sampling instant
    rss_mib: float = 0.0  # highest sum of RSS (counts shared pages once per process)
    processes: int = 0  # most processes seen at once
    samples: int = 0


class TreeSampler:
    """Samples the tree of `pid` every `interval` seconds in a thread until `stop()`."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self.peaks = TreePeaks()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def stop(self) -> TreePeaks:
        self._stop.set()
        self._thread.join()
        return self.peaks

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        pids = descendants(self.pid)
        totals = [rollup_kib(p) for p in pids]
        peaks = self.peaks
        peaks.pss_mib = max(peaks.pss_mib, sum(t.get("Pss", 0) for t in totals) / _KIB)
        peaks.rss_mib = max(peaks.rss_mib, sum(t.get("Rss", 0) for t in totals) / _KIB)
        peaks.processes = max(peaks.processes, sum(1 for t in totals if t.get("Rss", 0) > 0))
        peaks.samples += 1
