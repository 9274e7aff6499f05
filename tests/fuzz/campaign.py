"""A seeded fuzz run: cases of several targets spread over worker processes, tallied.

`run_campaign(plan, ...)` makes case 0 .. n-1 of each target in `plan` (interleaved, so that a
run stopped early has some of each), runs them on `workers` child processes (`harness.Worker`,
one thread each) and returns a `CampaignResult`: per target the outcomes by kind, the errors by
type, peak memory and time; and every failure with what reproduces it.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cases import Case, CaseMaker
from .harness import Outcome, Worker

_SLOW = 1.0  # seconds: a case this slow is listed (not a failure below the timeout)


@dataclass(frozen=True)
class Failure:
    target: str
    number: int
    kind: str
    detail: str
    description: str

    def reproduce(self, seed: int) -> str:
        return f"python -m tests.fuzz.repro {self.target} {seed} {self.number}"


@dataclass
class TargetTally:
    cases: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # refusals by error type
    seconds: float = 0.0
    peak_kib: int = 0
    slowest: tuple[float, int] = (0.0, -1)  # seconds, case number
    slow: int = 0

    def add(self, case: Case, outcome: Outcome) -> None:
        self.cases += 1
        self.kinds[outcome.kind] += 1
        if outcome.kind == "refused":
            self.errors[outcome.detail.split(":", 1)[0]] += 1
        self.seconds += outcome.seconds
        self.peak_kib = max(self.peak_kib, outcome.peak_kib)
        self.slowest = max(self.slowest, (outcome.seconds, case.number))
        self.slow += outcome.seconds >= _SLOW

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "outcomes": dict(sorted(self.kinds.items())),
            "refusals_by_error": dict(self.errors.most_common()),
            "case_seconds": round(self.seconds, 2),
            "mean_case_ms": round(1000 * self.seconds / max(self.cases, 1), 2),
            "slowest_case": {"seconds": round(self.slowest[0], 3), "number": self.slowest[1]},
            "cases_over_1s": self.slow,
            "peak_case_mib": round(self.peak_kib / 1024, 1),
        }


@dataclass
class CampaignResult:
    seed: int
    plan: dict[str, int]
    workers: int
    budget_kib: int
    timeout: float
    tallies: dict[str, TargetTally]
    failures: list[Failure]
    wall_seconds: float = 0.0
    worker_starts: int = 0

    def failures_of(self, target: str) -> list[Failure]:
        return [f for f in self.failures if f.target == target]

    def signatures(self) -> dict[tuple[str, str, str], list[Failure]]:
        """Failures grouped by target, kind and the detail with its numbers taken out."""
        groups: dict[tuple[str, str, str], list[Failure]] = {}
        for f in sorted(self.failures, key=lambda f: (f.target, f.number)):
            text = re.sub(r"0x[0-9a-fA-F]+|\d+", "N", f.detail.split(" | ")[0])[:140]
            groups.setdefault((f.target, f.kind, text), []).append(f)
        return groups

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "workers": self.workers,
            "cases": sum(t.cases for t in self.tallies.values()),
            "wall_seconds": round(self.wall_seconds, 1),
            "memory_budget_mib": self.budget_kib >> 10,
            "timeout_s": self.timeout,
            "worker_starts": self.worker_starts,
            "targets": {name: tally.to_json() for name, tally in self.tallies.items()},
            "failure_groups": [
                {
                    "target": target,
                    "kind": kind,
                    "signature": text,
                    "count": len(group),
                    "first": {
                        "number": group[0].number,
                        "detail": group[0].detail,
                        "case": group[0].description[:600],
                        "reproduce": group[0].reproduce(self.seed),
                    },
                    "numbers": [f.number for f in group[:50]],
                }
                for (target, kind, text), group in self.signatures().items()
            ],
        }

    def summary(self) -> str:
        lines = []
        for name, tally in self.tallies.items():
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(tally.kinds.items()))
            lines.append(f"{name}: {tally.cases} cases ({kinds}), {tally.seconds:.1f} s")
        return "\n".join(lines)


def _interleaved(plan: Mapping[str, int]) -> Iterator[tuple[str, int]]:
    """(target, number) pairs, the targets in turn."""
    streams = [zip(itertools.repeat(t), range(n), strict=False) for t, n in plan.items()]
    for group in itertools.zip_longest(*streams):
        yield from (item for item in group if item is not None)


def run_campaign(  # noqa: PLR0913 -- keyword inputs
    plan: Mapping[str, int],
    *,
    seed: int,
    workers: int,
    workdir: Path,
    templates: Mapping[str, Path],
    budget_kib: int,
    timeout: float,
    maker: CaseMaker | None = None,
    progress: Callable[[int], None] | None = None,
) -> CampaignResult:
    maker = maker or CaseMaker(templates, plan)
    result = CampaignResult(
        seed, dict(plan), workers, budget_kib, timeout, {t: TargetTally() for t in plan}, []
    )
    pending = _interleaved(plan)
    lock = threading.Lock()
    done = itertools.count(1)

    def drive(slot: int) -> int:
        worker = Worker(
            workdir / f"worker-{slot}", dict(templates), budget_kib=budget_kib, timeout=timeout
        )
        try:
            while True:
                with lock:
                    item = next(pending, None)
                if item is None:
                    return worker.starts
                case = maker.make(item[0], seed, item[1])
                outcome = worker.run(case.target, case.payload)
                with lock:
                    result.tallies[case.target].add(case, outcome)
                    if outcome.failed:
                        result.failures.append(
                            Failure(
                                case.target,
                                case.number,
                                outcome.kind,
                                outcome.detail,
                                case.description,
                            )
                        )
                    count = next(done)
                if progress is not None:
                    progress(count)
        finally:
            worker.close()

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        result.worker_starts = sum(pool.map(drive, range(workers)))
    result.wall_seconds = time.perf_counter() - start
    return result
