"""Per-process memory peaks of several process trees, sampled from `/proc/<pid>/status`.

Each process gets a role from its tree's root role and its depth (a build's pool workers, a Dask
nanny's worker process); per process the watch keeps the peaks of VmRSS (resident: anonymous,
file-backed and shared pages) and RssAnon (anonymous only: heaps, arrays, Python objects; mapped
plan and index pages are not in it), the kernel's own VmHWM, and the anonymous peak in each phase
of the run: before, while and after processes of `phase_role` are alive.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import procmem
from benchmarks.procmem import children

_PROC = Path("/proc")
_FIELDS = ("VmRSS", "RssAnon", "VmHWM")
_HELPERS = ("resource_tracker", "forkserver")  # multiprocessing's own processes
CHILD_ROLES = {"build": "worker", "nanny": "dask-worker"}
PHASES = ("before", "during", "after")


def watched_kib(pid: int) -> dict[str, int] | None:
    """VmRSS, RssAnon and VmHWM of `pid` in KiB; None once it has gone (or is a zombie)."""
    fields = procmem.status_kib(pid)
    found = {key: fields[key] for key in _FIELDS if key in fields}
    return found if len(found) == len(_FIELDS) else None


def _cmdline(pid: int) -> str:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def role_of(root_role: str, depth: int, cmdline: str) -> str:
    if depth == 0:
        return root_role
    if any(h in cmdline for h in _HELPERS):
        return "helper"
    return CHILD_ROLES.get(root_role, f"{root_role}-child")


@dataclass
class ProcessPeaks:
    pid: int
    role: str
    cmdline: str
    first_seen_s: float
    last_seen_s: float = 0.0
    first_rss_kib: int = 0
    first_anon_kib: int = 0
    rss_kib: int = 0
    anon_kib: int = 0
    hwm_kib: int = 0  # the kernel's peak RSS, as last read: catches peaks between samples
    phase_anon_kib: dict[str, int] = field(default_factory=dict)
    samples: int = 0

    def update(self, now: float, status: dict[str, int], phase: str) -> None:
        if self.samples == 0:
            self.first_rss_kib, self.first_anon_kib = status["VmRSS"], status["RssAnon"]
        self.samples += 1
        self.last_seen_s = now
        self.rss_kib = max(self.rss_kib, status["VmRSS"])
        self.anon_kib = max(self.anon_kib, status["RssAnon"])
        self.hwm_kib = max(self.hwm_kib, status["VmHWM"])
        self.phase_anon_kib[phase] = max(self.phase_anon_kib.get(phase, 0), status["RssAnon"])

    def to_json(self) -> dict[str, Any]:
        mib = 1024
        return {
            "pid": self.pid,
            "role": self.role,
            "cmdline": self.cmdline[:200],
            "seen_s": [round(self.first_seen_s, 1), round(self.last_seen_s, 1)],
            "samples": self.samples,
            "first_rss_mib": round(self.first_rss_kib / mib, 1),
            "first_anon_mib": round(self.first_anon_kib / mib, 1),
            "peak_rss_mib": round(self.rss_kib / mib, 1),
            "peak_anon_mib": round(self.anon_kib / mib, 1),
            "vm_hwm_mib": round(self.hwm_kib / mib, 1),
            "phase_peak_anon_mib": {k: round(v / mib, 1) for k, v in self.phase_anon_kib.items()},
        }


class MemoryWatch:
    """Samples the trees of `roots` (pid -> role) every `interval` s in a thread until `stop()`;
    `timeline` keeps one row per process about once a second: (s, role, pid, rss KiB, anon KiB)."""

    def __init__(
        self, roots: dict[int, str], interval: float = 0.2, phase_role: str | None = None
    ) -> None:
        self.roots = dict(roots)
        self.interval = interval
        self.phase_role = phase_role
        self.processes: dict[int, ProcessPeaks] = {}
        self.timeline: list[tuple[float, str, int, int, int]] = []
        self.samples = 0
        self._phase = 0
        self._began = time.monotonic()
        self._last_row = -1.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> MemoryWatch:
        self._began = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> list[ProcessPeaks]:
        self._stop.set()
        self._thread.join()
        return list(self.processes.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def _walk(self) -> list[tuple[int, str]]:
        """(pid, role) of every live process of every tree."""
        found = []
        for root, role in self.roots.items():
            todo = [(root, 0)]
            while todo:
                pid, depth = todo.pop()
                known = self.processes.get(pid)
                found.append((pid, known.role if known else role_of(role, depth, _cmdline(pid))))
                todo.extend((child, depth + 1) for child in children(pid))
        return found

    def _advance_phase(self, roles: set[str]) -> str:
        if self.phase_role is None:
            return PHASES[1]
        if self._phase == 0 and self.phase_role in roles:
            self._phase = 1
        elif self._phase == 1 and self.phase_role not in roles:
            self._phase = 2
        return PHASES[self._phase]

    def sample(self) -> None:
        now = time.monotonic() - self._began
        live = [(pid, role, watched_kib(pid)) for pid, role in self._walk()]
        live_roles = {role for _, role, status in live if status is not None}
        phase = self._advance_phase(live_roles)
        row = now - self._last_row >= 1.0
        for pid, role, status in live:
            if status is None:
                continue
            peaks = self.processes.get(pid)
            if peaks is None:
                peaks = self.processes[pid] = ProcessPeaks(pid, role, _cmdline(pid), now)
            peaks.update(now, status, phase)
            if row:
                self.timeline.append((round(now, 2), role, pid, status["VmRSS"], status["RssAnon"]))
        if row:
            self._last_row = now
        self.samples += 1
