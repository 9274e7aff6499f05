"""What `fastpack bench` measures and how long: the dataset, the loaders, the reader settings
the user trains with, and the limits of each timed pass."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fastpack.reader import CenterCrop, RandomResizedCrop, Transform

LOADERS = ("map-style", "streaming", "dali-cpu")  # the table's rows, in this order
TRANSFORMS = ("random-resized-crop", "center-crop")
TransformName = Literal["random-resized-crop", "center-crop"]


def available_cpus() -> int:
    """The cores this process may run on (its affinity mask, where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_workers() -> int:
    return min(8, available_cpus())


@dataclass(frozen=True, kw_only=True)
class BenchOptions:
    """A bench of the dataset at `path` (a directory or a URL).

    Each loader is timed over `passes` passes after a warm-up; a pass ends after `seconds` or
    after `batches` batches (None: no batch limit), whichever comes first. `step_ms` is the
    simulated training step: the loop sleeps that long after each batch (0: pure loading).
    """

    path: str
    workers: int = field(default_factory=default_workers)
    batch_size: int = 64
    transform: TransformName = "random-resized-crop"
    size: int = 224
    seconds: float = 3.0
    batches: int | None = None
    passes: int = 3
    step_ms: float = 0.0
    loaders: tuple[str, ...] = LOADERS
    storage_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        checks = (
            ("workers", self.workers >= 0, ">= 0"),
            ("batch_size", self.batch_size >= 1, ">= 1"),
            ("size", self.size >= 1, ">= 1"),
            ("seconds", self.seconds > 0, "> 0"),
            ("batches", self.batches is None or self.batches >= 1, ">= 1"),
            ("passes", self.passes >= 1, ">= 1"),
            ("step_ms", self.step_ms >= 0, ">= 0"),
            ("transform", self.transform in TRANSFORMS, f"one of {TRANSFORMS}"),
        )
        for name, ok, expected in checks:
            if not ok:
                raise ValueError(f"bench {name}={getattr(self, name)!r}: expected {expected}")
        unknown = [name for name in self.loaders if name not in LOADERS]
        if unknown or not self.loaders:
            raise ValueError(f"bench loaders {self.loaders!r}: expected some of {LOADERS}")

    def make_transform(self) -> Transform:
        if self.transform == "center-crop":
            return CenterCrop(self.size)
        return RandomResizedCrop(self.size)
