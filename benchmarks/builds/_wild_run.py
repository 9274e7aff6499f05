"""One `fastpack build` of the wild corpus in a subprocess of its own process group: its wall
time, exit (a status, a signal, or killed by the runner), the last lines of its stderr, its
summary line, and every process's memory peaks (`_scale_memory.MemoryWatch`, which reads the
kernel's VmHWM too, so a peak between two samples still counts). `kill_when` is polled while it
runs: once it holds, the whole process group gets SIGKILL, as a machine losing power or an
out-of-memory killer would leave it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.builds._scale_memory import MemoryWatch
from benchmarks.builds._scale_run import by_role, parse_summary

_POLL_S = 0.01
_TAIL_LINES = 6
_GONE_WAIT_S = 30.0


@dataclass(frozen=True, kw_only=True)
class Builds:
    """How every build of a run is made and run: `fastpack build` options, the limits, and the
    environment of the build process (`env`, `cwd`: another commit's fastpack first on
    PYTHONPATH, run outside the repository; None: this tree's)."""

    workers: int
    shard_size: str
    timeout: float
    interval: float
    env: dict[str, str] | None = None
    cwd: Path | None = None

    def command(
        self, source: Path, out: Path, *, baseline: bool, resume: bool = False
    ) -> list[str]:
        command = [sys.executable, "-m", "fastpack", "build", str(source), str(out)]
        command += [
            "--no-progress",
            "--workers",
            str(self.workers),
            "--shard-size",
            self.shard_size,
        ]
        return command + (["--baseline"] if baseline else []) + (["--resume"] if resume else [])

    def run(
        self, command: list[str], log: Path, kill_when: Callable[[], bool] | None = None
    ) -> dict[str, Any]:
        """`run_build` with these limits and this environment."""
        return run_build(command, log=log, builds=self, kill_when=kill_when)


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to every process of the group led by `process`; reaps it, then waits until no
    process of the group is left (its pool workers, now children of init)."""
    pgid = process.pid
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    process.wait()
    deadline = time.monotonic() + _GONE_WAIT_S
    while not _group_gone(pgid) and time.monotonic() < deadline:
        time.sleep(_POLL_S)


def _exit(returncode: int) -> str:
    if returncode == 0:
        return "ok"
    if returncode < 0:
        return f"signal {signal.Signals(-returncode).name}"
    return f"status {returncode}"


def run_build(
    command: list[str], *, log: Path, builds: Builds, kill_when: Callable[[], bool] | None = None
) -> dict[str, Any]:
    """Run `command` to its end, `builds.timeout` (then its group is killed: `timed_out`), or
    until `kill_when()` holds (`killed`)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    killed = timed_out = False
    with log.open("w") as err, log.with_suffix(".out").open("w") as out:
        began = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=out, stderr=err, start_new_session=True, env=builds.env, cwd=builds.cwd
        )
        watch = MemoryWatch({process.pid: "build"}, builds.interval, phase_role="worker").start()
        try:
            while process.poll() is None:
                elapsed = time.perf_counter() - began
                if elapsed > builds.timeout:
                    timed_out = True
                elif kill_when is not None and kill_when():
                    killed = True
                if killed or timed_out:
                    _kill_group(process)
                    break
                time.sleep(_POLL_S)
            process.wait()
            wall = time.perf_counter() - began
        finally:
            processes = watch.stop()
            _kill_group(process)  # a pool worker left behind by a build that died
    stderr = log.read_text(errors="replace").strip().splitlines()
    stdout = log.with_suffix(".out").read_text(errors="replace")
    return {
        "command": " ".join(command[1:]),
        "wall_s": round(wall, 2),
        "exit": "killed by the runner" if killed else _exit(process.returncode),
        "returncode": process.returncode,
        "killed": killed,
        "timed_out": timed_out,
        "stderr_tail": stderr[-_TAIL_LINES:],
        "summary": parse_summary(stdout),
        "memory": memory_of(processes),
    }


def memory_of(processes: list[Any]) -> dict[str, Any]:
    """Per role the highest peaks, and each process's peak RSS (the higher of the sampled VmRSS
    and the kernel's VmHWM) and anonymous peak, in MiB."""
    rows = [
        {
            "pid": p.pid,
            "role": p.role,
            "peak_rss_mib": round(max(p.rss_kib, p.hwm_kib) / 1024, 1),
            "peak_anon_mib": round(p.anon_kib / 1024, 1),
            "samples": p.samples,
        }
        for p in sorted(processes, key=lambda p: p.first_seen_s)
    ]
    roles = by_role(processes)
    for role, entry in roles.items():
        entry["peak_rss_mib"] = max(r["peak_rss_mib"] for r in rows if r["role"] == role)
    return {"by_role": roles, "processes": rows}
