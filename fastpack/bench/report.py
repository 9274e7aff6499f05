"""What `fastpack bench` prints: the settings, the decode ceiling, a table with one row per
loader, and the verdict; or the same as a JSON-ready dict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .ceiling import Ceiling
from .options import BenchOptions
from .results import LoaderResult
from .verdict import Verdict

HEADER = ("loader", "images/s", "first batch", "waiting", "of ceiling")


@dataclass(frozen=True, kw_only=True)
class BenchReport:
    options: BenchOptions
    samples: int
    shards: int
    ceiling: Ceiling
    results: tuple[LoaderResult, ...]
    verdict: Verdict
    decoder: str = ""  # the JPEG decoder crops ran through (crop_decode.decoder())

    def of_ceiling(self, result: LoaderResult) -> float | None:
        rate = result.images_per_second
        return None if rate is None else rate / self.ceiling.images_per_second

    def format(self) -> str:
        o, c = self.options, self.ceiling
        limit = f"{o.seconds:g} s" + ("" if o.batches is None else f" or {o.batches} batches")
        lines = [
            f"fastpack bench {o.path}: {self.samples} samples in {_count(self.shards, 'shard')}; "
            f"{_count(o.workers, 'worker')}, batches of {o.batch_size}, {o.transform} {o.size} px; "
            f"{o.passes} passes of at most {limit}; step {o.step_ms:g} ms",
            f"decode ceiling: {c.images_per_second:,.0f} images/s in "
            f"{_count(c.processes, 'process', 'processes')} "
            f"({c.per_process:,.0f} each), {o.transform} over {c.payloads} "
            "payloads in memory, no loader",
            f"decoder: {self.decoder}",
            "",
            *_table([HEADER, *(self._row(r) for r in self.results)]),
            "",
            f"verdict: {self.verdict.lines[0]}",
            *(f"  {line}" for line in self.verdict.lines[1:]),
        ]
        return "\n".join(lines)

    def _row(self, result: LoaderResult) -> tuple[str, ...]:
        timing, share = result.timing, self.of_ceiling(result)
        if timing is None or share is None:
            return (result.name, "-", "-", "-", "-", result.skipped or "")
        return (
            result.name,
            f"{timing.images_per_second:,.0f}",
            f"{timing.first_batch_seconds:.2f} s",
            f"{timing.wait_share:.0%}",
            f"{share:.0%}",
            result.note or "",
        )

    def to_dict(self) -> dict[str, Any]:
        o, c = self.options, self.ceiling
        return {
            "path": o.path,
            "samples": self.samples,
            "shards": self.shards,
            "workers": o.workers,
            "batch_size": o.batch_size,
            "transform": o.transform,
            "size": o.size,
            "seconds": o.seconds,
            "batches": o.batches,
            "passes": o.passes,
            "step_ms": o.step_ms,
            "decoder": self.decoder,
            "ceiling": {
                "images_per_second": c.images_per_second,
                "processes": c.processes,
                "per_process": c.per_process,
                "payloads": c.payloads,
                "pass_rates": list(c.pass_rates),
            },
            "loaders": [self._loader_dict(r) for r in self.results],
            "verdict": {
                "use": self.verdict.use,
                "bottleneck": self.verdict.bottleneck,
                "lines": list(self.verdict.lines),
            },
        }

    def _loader_dict(self, result: LoaderResult) -> dict[str, Any]:
        timing = result.timing
        return {
            "name": result.name,
            "images_per_second": result.images_per_second,
            "first_batch_seconds": None if timing is None else timing.first_batch_seconds,
            "wait_share": result.wait_share,
            "of_ceiling": self.of_ceiling(result),
            "pass_rates": None if timing is None else list(timing.pass_rates),
            "skipped": result.skipped,
            "note": result.note,
        }


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Rows in columns: the first left-aligned, the measured ones right-aligned, the last (a
    note or a reason) as it is."""
    widths = [max(len(row[k]) for row in rows) for k in range(len(HEADER))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:5], widths[1:], strict=True)]
        lines.append("  ".join([*cells, *row[5:]]).rstrip())
    return lines
