"""The torch side of `make_loader`; imported only when a loader is made (it imports torch)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, cast

from torch.utils.data import DataLoader, get_worker_info

from ..errors import LoaderStateError
from ..fields import ColumnKind
from ..image.cv2_threads import single_threaded_cv2
from ..order.reading import EpochReading
from ..order.sampler import EpochBatchSampler
from ..order.state import Progress
from ..order.stream import EpochStream, EpochView, SkipStale
from ..stats import LoaderMeter, LoaderStats
from ..streaming.dataset import StreamingDataset
from ..streaming.elastic import EpochProgress
from ..streaming.laps import EpochLaps
from ..streaming.run_on import RunOn
from .batch_slots import BatchSlots
from .streaming_state import StreamingProgress
from .streaming_state import make_state as make_streaming_state
from .streaming_state import read_state as read_streaming_state

WorkerInit = Callable[[int], None]


class SharedBatches:
    """The workers' side of `make_loader`'s batches: decoded straight into shared memory.

    `install`, the workers' init function, points the worker's dataset at the pool's
    allocator; `collate` sends the block the batch was decoded into, without a copy (see
    `_batch_slots`). Each worker holds its own copy of this object.
    """

    def __init__(
        self,
        slots: BatchSlots,
        user_init: WorkerInit | None = None,
        kinds: Sequence[ColumnKind] | None = None,
        run: Any = None,
    ) -> None:
        """`kinds`: the column kinds of a multi-field batch; None for `(images, labels)`.
        `run`: the shared count of an `EpochStream`'s restarts, whose stale batches the
        workers skip (`SkipStale`); None for none."""
        self.slots = slots
        self.user_init = user_init
        self.kinds = None if kinds is None else tuple(kinds)
        self.run = run

    def install(self, worker_id: int) -> None:
        """Run in each worker as it starts."""
        info = get_worker_info()
        if info is not None and hasattr(info.dataset, "batch_allocator"):
            self.slots.start(worker_id)
            info.dataset.batch_allocator = self.slots.allocate
        if info is not None and self.run is not None and hasattr(info.dataset, "__getitems__"):
            info.dataset.__getitems__ = SkipStale(info.dataset.__getitems__, self.run)
        if self.user_init is not None:
            self.user_init(worker_id)

    def collate(self, batch: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        """A batch from `Dataset.__getitems__` or a batching `StreamingDataset` (`(images,
        labels)` arrays, or one value per field) as tensors; None for a skipped one."""
        if batch is None:
            return None
        if self.kinds is None:
            return self.slots.collate(*batch)
        return self.slots.collate_fields(batch, self.kinds)


@contextmanager
def frozen_gc() -> Iterator[None]:
    """The trainer's objects moved out of reach of the garbage collector while the block runs.

    A process forked in the block inherits them frozen, so its own collections never write to
    them: their pages stay shared with the trainer instead of being copied into every worker
    (benchmarks/readers/RESULTS.md). The trainer unfreezes them when the block ends and collects
    them as before.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class Counted(Protocol):
    """An iteration's progress: the batches handed to the trainer so far."""

    yielded: int


class TrackedIterator:
    """The DataLoader's iterator, counting the batches it hands to the trainer (`progress`)
    and timing the trainer's wait for them (`meter`)."""

    def __init__(
        self, inner: Any, progress: Counted | None, meter: LoaderMeter | None = None
    ) -> None:
        self.inner = inner
        self.progress = progress
        self.meter = meter

    def __iter__(self) -> TrackedIterator:
        return self

    def __next__(self) -> Any:
        batch = next(self.inner) if self.meter is None else self.meter.next(self.inner)
        if self.progress is not None:
            self.progress.yielded += 1
        return batch

    def __len__(self) -> int:
        return len(self.inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class FastpackLoader(DataLoader[Any]):
    """A DataLoader whose worker processes start with single-threaded OpenCV and with the
    trainer's objects frozen for the garbage collector.

    Over an `EpochBatchSampler` it is resumable: `state_dict()` at any batch boundary says
    where in the epoch's order every rank has read to, and `load_state_dict(state)` makes the
    next iteration over that epoch start there, with any number of ranks, workers and any batch
    size (`fastpack.reader.order.state`). `stats()` says how the loading goes."""

    _order_reading: EpochReading | None = None  # over an EpochBatchSampler
    _stream: EpochStream | None = None  # with persistent workers over an EpochBatchSampler
    meter: LoaderMeter | None = None  # make_torch_loader's: the workers' counters, the wait
    stream_run: Any = None  # make_torch_loader's: the restarts of the stream, shared

    def __iter__(self) -> Any:
        stream, reading = self._epoch_stream(), self._order()
        if stream is not None and reading is not None:
            begun = reading.begin()
            return TrackedIterator(self._epoch_view(stream, begun), begun, self.meter)
        progress = self._start_progress()  # before the iterator pulls its first indices
        return TrackedIterator(self._torch_iterator(), progress, self.meter)

    def _torch_iterator(self) -> Any:
        if self.num_workers == 0:
            return super().__iter__()
        with single_threaded_cv2(), frozen_gc():  # workers are forked (or re-forked) in here
            return super().__iter__()

    @property
    def _index_sampler(self) -> Any:
        """What torch's iterators read their indices from: the batch sampler, or the stream of
        its epochs that persistent workers read on into the next epoch (`order.stream`)."""
        stream = self._epoch_stream()
        return super()._index_sampler if stream is None else stream

    def _epoch_stream(self) -> EpochStream | None:
        """The stream of the `EpochBatchSampler`'s epochs, with persistent workers that return
        batches in order; None otherwise (each iteration reads the batch sampler, as torch's)."""
        if self._stream is not None:
            return self._stream
        sampler = self.batch_sampler
        if (
            not isinstance(sampler, EpochBatchSampler)
            or self.num_workers == 0
            or not self.persistent_workers
            or not getattr(self, "in_order", True)  # a later epoch's batch could come first
        ):
            return None
        self._stream = EpochStream(sampler, self.stream_run)
        return self._stream

    def _epoch_view(self, stream: EpochStream, progress: Progress) -> EpochView:
        """The iteration's batches from the torch iterator: the one already prefetching them
        when the stream went on with this epoch from this position, else a restarted one."""
        epoch, start = progress.epoch, progress.start
        if self._iterator is None or not stream.continues(epoch, start):
            stream.restart(epoch, start)
            inner = self._torch_iterator()  # torch's reset drops the batches prefetched
        else:
            inner = self._iterator
        return stream.view(inner, epoch, progress.batches)

    def stats(self) -> LoaderStats:
        """What the loader did since the previous call (the first: since the first batch was
        asked for): `fastpack.reader.stats.LoaderStats`."""
        if self.meter is None:
            raise RuntimeError("stats() counts the loaders that make_loader makes")
        return self.meter.stats()

    def _order(self) -> EpochReading | None:
        """The reading of the loader's `EpochBatchSampler`; None over another batch sampler."""
        sampler = self.batch_sampler
        if not isinstance(sampler, EpochBatchSampler):
            return None
        reading = self._order_reading
        if reading is None:  # a DataLoader's batch sampler is set once
            where = f"{getattr(self.dataset, 'path', type(self.dataset).__name__)}"
            reading = self._order_reading = EpochReading(sampler, where)
        return reading

    def _ordered(self) -> EpochReading:
        reading = self._order()
        if reading is None:
            raise TypeError(
                "state_dict and load_state_dict need make_loader's batch sampler "
                f"(EpochBatchSampler), this loader has {type(self.batch_sampler).__name__}"
            )
        return reading

    def _start_progress(self) -> Counted | None:
        reading = self._order()
        return None if reading is None else reading.begin()

    def state_dict(self) -> dict[str, Any]:
        """Where the current epoch has been read to: its epoch and the position in its order
        that every rank has reached after the batches handed out so far (callable at any batch
        boundary; all ranks hold the same state), and what the order reads."""
        return self._ordered().state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from `state_dict()`: set the dataset's epoch to the state's, and start the
        next iteration over it where the state says. Refused (ValueError) when the state was
        saved over another dataset, view, mix, seed or shuffle, and every field is checked
        first: a `LoaderStateError` (a ValueError) names the one that is missing, unknown, of
        another type or out of range (`order.state.state_schema`)."""
        self._ordered().load_state_dict(state)


class StreamingLoader(FastpackLoader):
    """A FastpackLoader over a `StreamingDataset` that yields whole batches: its length is the
    number of batches of this rank per epoch (the dataset's own length counts samples), or of
    what is left of a resumed epoch.

    `state_dict()` at any batch boundary says how far every rank has read the epoch (all ranks
    hold the same state); `load_state_dict(state)` makes the next iteration over that epoch read
    the rest of it, with any world size, worker count and batch size (`streaming_state`), and
    restarts persistent workers. Needs `in_order` batches (torch's default).

    With persistent workers (and `in_order`), each worker's stream runs on into the next epoch
    while the trainer takes this epoch's last batches (`streaming.run_on`): an iteration over
    the epoch after the one read to its end, from its start, takes the batches they made ahead;
    any other iteration (another epoch, a resumed position) restarts them (`streaming.laps`)."""

    _resumed: EpochProgress | None = None  # loaded, not yet read
    _reading: StreamingProgress | None = None  # the current (or last) iteration
    _laps: EpochLaps | None = None  # the workers' run-on streams: with persistent workers
    _whole_memo: tuple[Any, int, int | None, int] | None = None  # `_whole_epoch`'s

    def __init__(self, dataset: StreamingDataset, *args: Any, **kwargs: Any) -> None:
        super().__init__(dataset, *args, **kwargs)
        if self.num_workers > 0 and self.persistent_workers and getattr(self, "in_order", True):
            run_on = RunOn()  # before the workers start, which share it
            dataset.run_on = run_on
            self.collate_fn = run_on.collate(self.collate_fn)
            self._laps = EpochLaps(run_on)

    def __len__(self) -> int:
        dataset = self._streaming()
        epoch, resumed = dataset.current_epoch(), self._resumed
        if resumed is None and self._reading is not None:
            resumed = self._reading.resumed
        if resumed is None or resumed.epoch != epoch or not resumed.segments:
            return self._whole_epoch()[1]
        return dataset.num_batches(self.num_workers, resumed)

    def _whole_epoch(self) -> tuple[int | None, int]:
        """The resident budget and the batches of a whole epoch, which depend on the dataset's
        options and world size alone: worked out again only when either changes, so that an
        epoch's `iter()` costs next to nothing."""
        dataset = self._streaming()
        key = (dataset.options, dataset.world_size)
        memo = self._whole_memo
        if memo is None or memo[0] is not key[0] or memo[1] != key[1]:
            budget = dataset.resident_budget(self.num_workers)
            batches = dataset.num_batches(self.num_workers, None)
            memo = self._whole_memo = (key[0], key[1], budget, batches)
        return memo[2], memo[3]

    def __iter__(self) -> Any:
        laps = self._laps
        if laps is None:
            iterator = super().__iter__()  # the workers start here, with the dataset's resume
            self._streaming().resume(None)  # later workers start from the top of their epoch
            return iterator
        progress = self._start_progress()
        fresh = not progress.resumed.segments
        if self._iterator is None or not fresh or not laps.continues(progress.epoch):
            laps.restart(progress.epoch, fresh=fresh)
            inner = self._torch_iterator()  # the workers (re)start here, with the resume
            self._streaming().resume(None)
        else:
            inner = self._iterator  # its prefetch holds the epoch's first batches
        view = laps.view(inner, progress.epoch, len(self))
        return TrackedIterator(view, progress, self.meter)

    def _streaming(self) -> StreamingDataset:
        return cast(StreamingDataset, self.dataset)

    def _check_in_order(self) -> None:
        if not getattr(self, "in_order", True):
            raise ValueError(
                "a StreamingLoader's state needs in_order=True: it counts the batches taken "
                "from the workers in turn"
            )

    def _start_progress(self) -> StreamingProgress:
        dataset = self._streaming()
        epoch, resumed = dataset.current_epoch(), self._resumed
        if resumed is None or resumed.epoch != epoch:
            budget = self._whole_epoch()[0]
            resumed = EpochProgress(epoch=epoch, segments=(), resident_budget=budget)
        self._resumed = None
        self._reading = StreamingProgress(
            epoch=epoch,
            resumed=resumed,
            world=dataset.world_size,
            workers=self.num_workers,
            batch_size=dataset.batch_size or 1,
        )
        return self._reading

    def state_dict(self) -> dict[str, Any]:
        """How far every rank has read the current epoch: the batches handed out by each layout
        that read part of it (`streaming_state`)."""
        self._check_in_order()
        dataset = self._streaming()
        epoch, progress = dataset.current_epoch(), self._resumed  # loaded and not yet read
        if progress is None and self._reading is not None:
            progress = self._reading.progress()
        if progress is None or progress.epoch != epoch:  # nothing of this epoch read yet
            budget = dataset.resident_budget(self.num_workers)
            progress = EpochProgress(epoch=epoch, segments=(), resident_budget=budget)
        return make_streaming_state(dataset, progress)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from `state_dict()`: set the dataset's epoch to the state's, and make the next
        iteration over it read what is left. Refused (ValueError) when the state was saved over
        another dataset or view, or with another seed, shuffle, drop_last or shuffle_window,
        and every field is checked first: a `LoaderStateError` (a ValueError) names the one
        that is missing, unknown, of another type or out of range."""
        self._check_in_order()
        dataset = self._streaming()
        progress = read_streaming_state(dataset, state)
        try:
            dataset.num_batches(self.num_workers, progress)
        except ValueError as e:  # more batches than a segment's streams hold
            raise LoaderStateError(
                f"{dataset.path}: StreamingLoader state field 'segments': expected the batches "
                f"of each layout's streams, found {e}"
            ) from e
        dataset.set_epoch(progress.epoch)
        dataset.resume(progress)
        self._resumed, self._reading = progress, None
        if self._iterator is not None:  # persistent workers hold the old dataset: new ones
            getattr(self._iterator, "_shutdown_workers", lambda: None)()
            self._iterator = None
