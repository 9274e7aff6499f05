"""Where a raw JSON's figures come from: the commit, whether the tree was clean, the machine."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DIRTY_SUFFIX = " with uncommitted changes"
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


def load_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def provenance(report: dict[str, Any]) -> Provenance:
    """Read from the keys the benchmarks write (`fastpack_commit` or `commit`)."""
    recorded = str(report.get("fastpack_commit", report.get("commit", UNKNOWN)))
    commit = recorded.removesuffix(DIRTY_SUFFIX).strip() or UNKNOWN
    m = report.get("machine", {})
    machine = f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('ram_gib', '?')} GiB"
    return Provenance(
        commit=commit,
        clean=commit != UNKNOWN and not recorded.endswith(DIRTY_SUFFIX),
        date=str(report.get("date", "?"))[:10],
        machine=machine,
    )
