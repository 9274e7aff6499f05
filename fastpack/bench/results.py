"""One row of a bench: a loader's timing, or why it was not measured."""

from __future__ import annotations

from dataclasses import dataclass

from .timing import Timing


@dataclass(frozen=True, kw_only=True)
class LoaderResult:
    name: str  # one of options.LOADERS
    timing: Timing | None = None
    skipped: str | None = None  # why there is no timing
    note: str | None = None  # how it read: from the URL, DALI threads

    @property
    def images_per_second(self) -> float | None:
        return None if self.timing is None else self.timing.images_per_second

    @property
    def wait_share(self) -> float | None:
        return None if self.timing is None else self.timing.wait_share
