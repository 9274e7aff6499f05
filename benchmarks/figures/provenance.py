"""Where a raw JSON's figures come from: the commit, whether the tree was clean, the machine."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

UNKNOWN = "?"


@dataclass(frozen=True)
class Provenance:
    commit: str  # as recorded; "?" where git could not tell
    clean: bool  # every tracked file as committed
    date: str
    machine: str  # "AMD EPYC, 2 cores, 23.5 GiB"

    @property
    def known(self) -> bool:
        return self.commit != UNKNOWN

    def stamp(self) -> str:
        """`machine; commit `abc1234` (clean tree), date`: what every figure says it came from."""
        tree = "clean tree" if self.clean else "UNCOMMITTED CHANGES"
        date = "" if self.date == UNKNOWN else f", {self.date}"
        return f"{self.machine}; commit `{self.commit}` ({tree}){date}"


def load_range(loads: list[str]) -> str:
    """`low to high` of the 1-minute figure of `uptime`-style load strings."""
    ones = [float(load.split(",")[0]) for load in loads]
    return f"{min(ones):.1f} to {max(ones):.1f}"


def load_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def _recorded(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The dictionaries that record a run: the report itself, or each part's `meta` where a
    benchmark runs in parts (the start-up benchmark)."""
    if "fastpack_commit" in report or "commit" in report:
        return [report]
    return [v["meta"] for v in report.values() if isinstance(v, dict) and "meta" in v]


def _commit_and_clean(recorded: str) -> tuple[str, bool]:
    """`abc1234`, `abc1234 with uncommitted changes` or `abc1234 (no tracked file modified;
    ...)`: the forms the benchmarks have written."""
    words = recorded.split()
    commit = words[0] if words else UNKNOWN
    rest = recorded[len(commit) :].strip()
    clean = commit != UNKNOWN and (not rest or rest.startswith("(no tracked file modified"))
    return commit, clean


def provenance(report: dict[str, Any]) -> Provenance:
    """Read from the keys the benchmarks write (`fastpack_commit` or `commit`)."""
    runs = _recorded(report) or [{}]
    found = {
        _commit_and_clean(str(r.get("fastpack_commit", r.get("commit", UNKNOWN)))) for r in runs
    }
    if len({commit for commit, _ in found}) > 1:
        raise ValueError(f"the parts of one report record different commits: {sorted(found)}")
    commit = next(iter(found))[0]
    m = runs[0].get("machine", {})
    machine = f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('ram_gib', '?')} GiB"
    return Provenance(
        commit=commit,
        clean=all(clean for _, clean in found),
        date=str(runs[0].get("date", "?"))[:10],
        machine=machine,
    )
