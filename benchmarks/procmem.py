"""Memory of a process tree, sampled from /proc: total PSS and total RSS of a process and all its
descendants (DataLoader workers, writer pools), and the peaks over a run."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


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


def rollup(pid: int) -> dict[str, int]:
    """Every KiB field of `/proc/<pid>/smaps_rollup` (Rss, Pss, Private_Dirty, ...)."""
    found = {}
    for line in (_PROC / str(pid) / "smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if rest.strip().endswith("kB"):
            found[key] = int(rest.split()[0])
    return found


def rollup_kib(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process in KiB from smaps_rollup; (0, 0) once it has gone."""
    try:
        fields = rollup(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0, 0
    return fields.get("Pss", 0), fields.get("Rss", 0)


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
        peaks.pss_mib = max(peaks.pss_mib, sum(t[0] for t in totals) / 1024)
        peaks.rss_mib = max(peaks.rss_mib, sum(t[1] for t in totals) / 1024)
        peaks.processes = max(peaks.processes, sum(1 for t in totals if t[1] > 0))
        peaks.samples += 1
