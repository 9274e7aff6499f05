"""Run a benchmark step in a fresh Python process and read its `RESULT <json>` line."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.procmem import TreePeaks, TreeSampler

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Outcome:
    result: dict[str, Any] | None  # the step's RESULT, or None when it failed
    error: str = ""  # the last line of its stderr (or the timeout) when it failed
    memory: TreePeaks = field(default_factory=TreePeaks)


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1] if lines else "no output"


def run_step(module: str, args: list[str], log: Path, timeout: float, memory: bool) -> Outcome:
    """`python -m benchmarks.<module> ARGS` from the repository root; stderr goes to `log`.

    With `memory`, the process tree is sampled for PSS/RSS while it runs."""
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", f"benchmarks.{module}", *args]
    with log.open("w") as err:
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True)
        sampler = TreeSampler(process.pid).start() if memory else None
        try:
            stdout, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return Outcome(None, f"timed out after {timeout:.0f} s; see {log}")
        finally:
            peaks = sampler.stop() if sampler else TreePeaks()
    if process.returncode != 0:
        return Outcome(None, _last_line(log), peaks)
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return Outcome(json.loads(line[len("RESULT ") :]), memory=peaks)
    return Outcome(None, f"no RESULT line; see {log}", peaks)
