"""The trainer's side of run-on streams (`run_on`): one epoch at a time cut out of a torch
iterator whose workers read on into the next epoch. Torch-free.

`EpochLaps` follows the streams: when the next iteration is over the epoch they went on with,
from its start (the previous view read its whole epoch; `continues`), it reads on from the same
torch iterator, whose prefetched items are the epoch's first batches. Otherwise (`set_epoch` to
another epoch, a resumed position, an epoch left before its end) the streams restart where the
iteration starts (`restart`), and the torch iterator with them. A trainer that reads a whole
epoch twice in a row (one that never calls `set_epoch`) makes the streams restart with that
epoch repeated, until it reads another.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .run_on import RunOn, Tagged


class EpochLaps:
    """Which epoch the workers' streams of `run_on` go on with, and the views of their epochs,
    one per iteration; `lap` is the streams' lap the latest view reads."""

    def __init__(self, run_on: RunOn) -> None:
        self.run_on = run_on
        self.expected: int | None = None  # the epoch the streams go on with, once read to it
        self.lap = -1
        self.generation = 0  # counts the views: an older view stops

    def continues(self, epoch: int) -> bool:
        """Whether an iteration over `epoch` from its start is what the streams go on with
        (the previous view read its whole epoch, and this is the one after it)."""
        return self.expected == epoch

    def restart(self, epoch: int, *, fresh: bool) -> None:
        """Make the streams start anew, with `epoch` (from its start when `fresh`, else where
        its resume says), and go on with the same epoch again when the previous view read all
        of it and this one reads it from its start."""
        repeat = fresh and self.run_on.step == 1 and self.expected == epoch + 1
        self.run_on.restart(repeat=repeat)
        self.expected, self.lap = None, -1

    def view(self, inner: Iterator[Tagged], epoch: int, length: int) -> LapView:
        """The next `length` batches of `inner`, a torch iterator over the streams at the
        start of `epoch` (right after a restart, or after the previous view's epoch)."""
        self.generation += 1
        self.lap += 1
        self.expected = None
        return LapView(self, inner, epoch, length)

    def ended(self, epoch: int) -> None:
        """The latest view read all `epoch`'s batches."""
        self.expected = epoch + self.run_on.step


class LapView:
    """One epoch's batches from a torch iterator over run-on streams: `length` of them, the
    fillers and the previous lap's last items dropped, then StopIteration, with the streams'
    next epoch left in the iterator's prefetch. A view stops too once a newer one is made."""

    def __init__(self, laps: EpochLaps, inner: Iterator[Tagged], epoch: int, length: int) -> None:
        self.laps, self.inner = laps, inner
        self.epoch, self.length = epoch, length
        self.lap, self.generation = laps.lap, laps.generation
        self.taken = 0
        self._check_end()

    def __iter__(self) -> LapView:
        return self

    def __next__(self) -> Any:
        if self.taken >= self.length or self.generation != self.laps.generation:
            raise StopIteration
        item = next(self.inner)
        while item.lap != self.lap or item.batch is None:
            if item.lap > self.lap:
                raise RuntimeError(
                    f"the workers' streams went on past epoch {self.epoch} after {self.taken} of "
                    f"its {self.length} batches"
                )
            item = next(self.inner)
        self.taken += 1
        self._check_end()
        return item.batch

    def _check_end(self) -> None:
        if self.taken == self.length and self.generation == self.laps.generation:
            self.laps.ended(self.epoch)

    def __len__(self) -> int:
        return self.length

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
