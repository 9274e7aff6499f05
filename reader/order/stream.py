"""The batches of successive epochs as one stream, so that persistent workers decode the next
epoch's first batches while the trainer takes the last ones of this epoch.

A DataLoader with persistent workers starts sending an epoch's batches to its workers only when
the trainer asks for the epoch's iterator: the epoch's first batch then waits for a whole batch
to be decoded from scratch. Since an epoch's batches are a function of the seed, the epoch and
the position it starts from (`EpochBatchSampler.batches`), the torch iterator of a
`FastpackLoader` reads its indices from an `EpochStream` instead: epoch e from where it starts,
then epoch e + 1 from 0, and so on. The trainer reads one epoch at a time through an
`EpochView`, which stops after the epoch's batches; the torch iterator goes on prefetching the
stream. When the next iteration is over the epoch the stream went on with (`expected`), it
continues the same torch iterator. Otherwise (`set_epoch` to another epoch, `load_state_dict`
to another position, an epoch left before its end) the stream restarts where the iteration
starts and the torch iterator is reset, which drops the batches it prefetched: the workers
skip those they have not begun (`StreamBatch.run`, `SkipStale`). A trainer that
reads a whole epoch twice in a row (one that never calls `set_epoch`) makes the stream restart
with that epoch repeated, until it reads another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .sampler import EpochBatch, EpochBatchSampler, tag_ahead
from .state import epoch_limit


class StreamBatch(EpochBatch):
    """An `EpochBatch` of an `EpochStream`, tagged with the stream's run (how many times it
    has restarted) when it was made."""

    def __init__(
        self, indices: Iterable[int], epoch: int, ahead: list[int] | None = None, run: int = 0
    ) -> None:
        super().__init__(indices, epoch, ahead)
        self.run = run

    def __reduce__(self) -> tuple[Any, ...]:
        return StreamBatch, (list(self), self.epoch, self.ahead, self.run)


class SkipStale:
    """A worker's `__getitems__` that returns None for a `StreamBatch` of an earlier run of
    its stream than the shared `run` says (the trainer drops it unread) instead of decoding it."""

    def __init__(self, getitems: Callable[[Any], Any], run: Any) -> None:
        self.getitems, self.run = getitems, run

    def __call__(self, indices: Any) -> Any:
        if isinstance(indices, StreamBatch) and indices.run != self.run.value:
            return None
        return self.getitems(indices)


class EpochStream:
    """The index source of a torch iterator: `sampler`'s batches of the epoch `restart` names
    from its start position, then of every later epoch from 0 (or of the same epoch again, when
    the trainer has just read it twice), each tagged with the batch its worker reads next
    (`EpochBatchSampler.ahead_stride`). Its length is the sampler's, what a DataLoader reports
    as its own. `run`, a shared integer (`multiprocessing.RawValue`) or None, counts the
    restarts for the workers."""

    def __init__(self, sampler: EpochBatchSampler, run: Any = None) -> None:
        self.sampler, self.run = sampler, run
        self.first = (0, 0)  # (epoch, start) where the next iteration of the stream starts
        self.step = 1  # from one epoch of the stream to the next: 1, or 0 to repeat it
        self.expected: tuple[int, int] | None = None  # the (epoch, start) the reader is at
        self.generation = 0  # counts the views: an older view stops

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self) -> Iterator[EpochBatch]:
        run = 0 if self.run is None else int(self.run.value)
        tagged = (StreamBatch(b, b.epoch, None, run) for b in self._epochs(*self.first, self.step))
        return tag_ahead(tagged, self.sampler.ahead_stride)

    def _epochs(self, epoch: int, start: int, step: int) -> Iterator[EpochBatch]:
        yield from self.sampler.batches(epoch, start)
        if step == 0:
            while True:
                yield from self.sampler.batches(epoch, 0)
        for later in range(epoch + 1, epoch_limit(len(self.sampler.epoch_order)) + 1):
            yield from self.sampler.batches(later, 0)

    def continues(self, epoch: int, start: int) -> bool:
        """Whether an iteration over `epoch` from `start` is what the stream's reader goes on
        with (the previous view read its whole epoch, and this is the one after it from 0)."""
        return self.expected == (epoch, start)

    def restart(self, epoch: int, start: int) -> None:
        """Make the stream's next iteration start with `epoch` from `start`, and go on with the
        same epoch again when the previous view read all of it and this one reads it from 0."""
        repeat = self.step == 1 and self.expected == (epoch + 1, 0) and start == 0
        self.step = 0 if repeat else 1
        self.first, self.expected = (epoch, start), None
        if self.run is not None:  # the workers skip the batches of the runs before
            self.run.value += 1

    def view(self, inner: Iterator[Any], epoch: int, length: int) -> EpochView:
        """The next `length` batches of `inner`, a torch iterator over this stream positioned
        at the first batch of `epoch`."""
        self.generation += 1
        self.expected = None
        return EpochView(self, inner, epoch, length)


class EpochView:
    """One epoch's batches from a torch iterator over an `EpochStream`: `length` of them, then
    StopIteration, with the stream's next epoch left in the iterator's prefetch. A view stops
    too once a newer one over the same stream is made."""

    def __init__(self, stream: EpochStream, inner: Iterator[Any], epoch: int, length: int) -> None:
        self.stream, self.inner = stream, inner
        self.epoch, self.length = epoch, length
        self.generation = stream.generation
        self.taken = 0
        self._check_end()

    def __iter__(self) -> EpochView:
        return self

    def __next__(self) -> Any:
        if self.taken >= self.length or self.generation != self.stream.generation:
            raise StopIteration
        batch = next(self.inner)
        self.taken += 1
        self._check_end()
        return batch

    def _check_end(self) -> None:
        if self.taken == self.length and self.generation == self.stream.generation:
            self.stream.expected = (self.epoch + self.stream.step, 0)

    def __len__(self) -> int:
        return self.length

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
