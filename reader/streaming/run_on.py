"""Streams that run on from one epoch into the next, so that persistent DataLoader workers read
and decode epoch e + 1's first batches while the trainer takes epoch e's last ones. Torch-free.

A DataLoader restarts each worker's iterator over an `IterableDataset` when the trainer asks
for the next epoch's iterator: the epoch's first batch then waits for a whole batch to be read
and decoded from scratch. Since a stream's epoch is a function of the seed, the epoch and where
it resumes (`plan`, `elastic`), a worker of a `StreamingLoader` reads one stream instead
(`RunOn.stream`): its epoch e from where the pending resume says, then epoch e + 1 from its
start, and so on (or epoch e again and again: `step` 0), every item `Tagged` with its lap (the
epochs the stream went through before it). The trainer cuts one epoch out of it at a time
(`laps.EpochLaps`).

torch takes the workers' items in turn (`in_order`): the trainer's order within an epoch is
torch's own (one batch from each worker in turn, those whose streams have ended left out) when
every worker hands out the same number of items per epoch. So a stream pads its epoch with
fillers (`Tagged(lap, None)`) up to the most batches any stream of its rank reads in it; the
trainer drops them unread.

When the trainer restarts the streams (another epoch, a resumed position, an epoch left before
its end), it counts the restart in shared memory (`restart`): a stream of an earlier run hands
out `STALE` items, undecoded, to the requests torch sent it before its restart.
"""

from __future__ import annotations

import ctypes
import multiprocessing
from collections.abc import Callable, Generator, Iterator
from typing import Any, NamedTuple, Protocol

from ..order.schema import INT64_MAX


class Tagged(NamedTuple):
    """An item of a run-on stream: `batch` of the stream's lap `lap` (0: its first epoch), or,
    with `batch` None, a filler (`lap` -1: an item of an earlier run, `STALE`)."""

    lap: int
    batch: Any


STALE = Tagged(-1, None)
_END = object()


class Epochs(Protocol):
    """What a run-on stream reads (`StreamingDataset.open_epoch`)."""

    def open_epoch(self, epoch: int) -> tuple[Iterator[Any], int]:
        """This stream's batches of `epoch` (where the resume pending says: from its start when
        there is none), and the most batches any stream of its rank yields in it."""
        ...


class RunOn:
    """The trainer's word to its workers' streams, in shared memory (made before they start):
    how many times it restarted them (`run`), and whether a stream goes on with the next epoch
    (`step` 1) or with the same one again (0). Processes forked after it was made share it; a
    process being spawned receives it shared."""

    def __init__(self) -> None:
        self._run: Any = multiprocessing.RawValue(ctypes.c_int64, 0)
        self._step: Any = multiprocessing.RawValue(ctypes.c_int64, 1)

    @property
    def step(self) -> int:
        return int(self._step.value)

    def restart(self, *, repeat: bool) -> None:
        """Make the streams started from now on go on with the same epoch (`repeat`) or the
        next one, and the streams of the earlier runs hand out `STALE` items."""
        self._step.value = 0 if repeat else 1
        self._run.value += 1

    def stream(self, epochs: Epochs, epoch: int) -> Iterator[Tagged]:
        """A worker's stream from `epoch` on, read from `epochs`: its run, its step and what
        it reads of `epoch` settled now, before the first item."""
        first = epochs.open_epoch(epoch)
        return self._laps(epochs, epoch, first, int(self._run.value), self.step)

    def _laps(
        self, epochs: Epochs, epoch: int, first: tuple[Iterator[Any], int], run: int, step: int
    ) -> Iterator[Tagged]:
        lap, (batches, rounds) = 0, first
        while True:
            handed = yield from self._epoch(batches, lap, run)
            if handed is None:  # restarted: this stream's items are no longer read
                while True:
                    yield STALE
            if handed > rounds:
                raise RuntimeError(
                    f"a stream of epoch {epoch} yielded {handed} batches, more than the "
                    f"{rounds} that its rank's streams yield at most"
                )
            for _ in range(rounds - handed):
                yield Tagged(lap, None)
            lap, epoch = lap + 1, epoch + step
            if epoch > INT64_MAX:
                return
            batches, rounds = epochs.open_epoch(epoch)

    def _epoch(
        self, batches: Iterator[Any], lap: int, run: int
    ) -> Generator[Tagged, None, int | None]:
        """`batches` tagged with `lap`; returns how many there were, or None when the streams
        were restarted (each batch is read only after checking that they were not)."""
        handed = 0
        try:
            while self._run.value == run:
                batch = next(batches, _END)
                if batch is _END:
                    return handed
                handed += 1
                yield Tagged(lap, batch)
            return None
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()  # its shard files, now rather than when it is collected

    def collate(self, collate: Callable[[Any], Any]) -> CollateTagged:
        """The DataLoader's `collate_fn` for the items of these streams, around `collate`."""
        return CollateTagged(collate)


class CollateTagged:
    """A DataLoader's `collate_fn` over `Tagged` items: `collate` applied to each batch, the
    item's tag kept (fillers pass as they are); otherwise it stands for `collate`."""

    def __init__(self, collate: Callable[[Any], Any]) -> None:
        self.collate = collate

    def __call__(self, item: Tagged) -> Tagged:
        if item.batch is None:
            return item
        return Tagged(item.lap, self.collate(item.batch))

    def __getattr__(self, name: str) -> Any:
        """Anything else is the wrapped collate's (a bound method's `__self__`)."""
        collate = self.__dict__.get("collate")  # none yet while it is unpickled
        if collate is None:
            raise AttributeError(name)
        return getattr(collate, name)
