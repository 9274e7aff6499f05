"""What a source scan yields: one `PlanRow` per input, in the source's canonical order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .labels import LabelTable


class PlanRow(NamedTuple):
    """One input. `source` is its path relative to the scan's root (filesystem bytes), or
    `<tar name>:<key>` for a tar member; `container` and `offset` locate a tar member's data."""

    source: bytes
    label: int
    size: int
    container: int = 0
    offset: int = 0


@dataclass(frozen=True, kw_only=True)
class SourceScan:
    """A source opened for planning. `rows` is consumed once, streaming.

    Labels are final when `labels` is None (with `classes` their names); otherwise they are ids
    of `labels`, mapped once the scan is over.
    """

    kind: str
    root: Path
    rows: Iterator[PlanRow]
    classes: tuple[str, ...] = ()
    labels: LabelTable | None = None
    containers: tuple[str, ...] = ()
