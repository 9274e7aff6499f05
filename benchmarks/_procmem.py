"""Memory of a process tree, sampled from /proc: total PSS and total RSS of a process and all its
descendants (DataLoader workers, writer pools), and the peaks over a run."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, from /proc/<pid>/task/<tid>/children."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in (_PROC / str(current) / "task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def rollup_kib(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process in KiB from smaps_rollup; (0, 0) once it has gone."""
    pss = rss = 0
    try:
        text = (_PROC / str(pid) / "smaps_rollup").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0, 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            pss = int(line.split()[1])
        elif line.startswith("Rss:"):
            rss = int(line.split()[1])
    return pss, rss


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
