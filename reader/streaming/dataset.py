"""`StreamingDataset`: an iterable over a dataset at a URL (or a local one), shard by shard. A
facade: it holds its options (`options`) and delegates to parts with explicit inputs, a module
each: where the bytes are (`site`), the node's shard cache (`cache`, `eviction`, `budget`), the
epochs' plans (`planner`), one epoch's stream (`epoch_stream`) and a stream's resume (`resume`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import DatasetFiles, Manifest, View

from ..closing import ClosesOnExit
from ..fields import BatchLayout, collate
from ..image.batch import Allocate
from ..image.transforms import Transform
from ..ranks import resolve_rank
from ..shard_files import IoChoice, IoMethod
from ..views import ViewSpec
from ._delegated import Delegated
from ._torch import IterableBase, register_iterable
from ._torch import worker_info as _worker_info
from .budget import CacheBudget
from .elastic import EpochProgress
from .epoch import SharedEpoch
from .epoch_stream import Reading, Sample, Shards, read_epoch
from .opened import Opened
from .options import FetchOptions, StreamingOptions
from .plan import Chunk, Part, Stream, StreamPlan
from .planner import EpochPlans
from .reading import Columns
from .resume import Cursor, StreamResume
from .run_on import RunOn
from .site import Site, locate
from .sources import ShardSource
from .stream_state import make_state as make_stream_state
from .view_rows import order_identity, streaming_view


class StreamingDataset(ClosesOnExit, IterableBase):
    """Samples `(image HxWx3 uint8, label int64)` of a dataset, one at a time (or in batches),
    as an iterable: an `IterableDataset` for torch's DataLoader (registered as one when torch is
    installed), each rank reading `ceil(N / world_size)` samples of every epoch (`drop_last`:
    `floor`), in shards split over its DataLoader workers and shuffled across windows of
    `shuffle_window` shards (`plan`). `fields`, `field`, `pad`, `pad_value` and
    `drop_empty_boxes` choose what a sample is, as for `Dataset` (batch such samples with
    `collate_fn=ds.collate`); `batch_size` makes each stream yield batches of its own samples,
    decoded in place (into `batch_allocator`'s arrays when set; `make_loader(ds, ...)`).

    Call `set_epoch(e)` before each epoch: the epoch is shared with the DataLoader's workers.
    `state_dict()` and `load_state_dict()` describe one stream in samples (`resume`); the state
    of `make_loader(ds, ...)` resumes an epoch with any layout (`elastic`). `view` reads only a
    view's samples (a class-balanced view is refused). A local `path` is read in place; a URL's
    or, given `cache_dir`, a mount's shards are fetched into the node's cache (`site`), bounded
    by `cache_limit` (`budget`), `prefetch` shards ahead (None: chosen as the stream goes), with
    the connections of `fetch`. `version` reads that version of a dataset grown by `fastpack
    append` (default: the latest, settled when the dataset is made: its workers read the same
    one); `self.version` is the version read. `close()` (or leaving a `with` block) drops the
    index map this process opened; an iteration's shard files close when it ends or is dropped.
    """

    transform: Delegated[Transform | None] = Delegated("options")
    seed: Delegated[int] = Delegated("options")
    shuffle: Delegated[bool] = Delegated("options")
    shuffle_window: Delegated[int] = Delegated("options")
    prefetch: Delegated[int | None] = Delegated("options")
    drop_last: Delegated[bool] = Delegated("options")
    rank: Delegated[int] = Delegated("options")
    world_size: Delegated[int] = Delegated("options")
    cache_limit: Delegated[int | None] = Delegated("options")
    fetch: Delegated[FetchOptions] = Delegated("options")
    pad: Delegated[bool] = Delegated("options")
    pad_value: Delegated[float] = Delegated("options")
    drop_empty_boxes: Delegated[bool] = Delegated("options")
    batch_size: Delegated[int | None] = Delegated("options")
    ahead_limit: Delegated[int] = Delegated("options")
    path: Delegated[str] = Delegated("site", settable=False)
    root: Delegated[Path] = Delegated("site", settable=False)
    manifest: Delegated[Manifest] = Delegated("site", settable=False)
    io: Delegated[IoMethod] = Delegated("site", settable=False)
    field: Delegated[str | None] = Delegated("columns", settable=False)
    fields: Delegated[tuple[str, ...]] = Delegated("columns", settable=False)
    layout: Delegated[BatchLayout] = Delegated("columns", settable=False)

    def __init__(  # noqa: PLR0913 -- public signature
        self,
        path: str | os.PathLike[str],
        *,
        transform: Transform | None = None,
        seed: int = 0,
        shuffle: bool = True,
        shuffle_window: int = 4,
        prefetch: int | None = None,
        drop_last: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_limit: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        io: IoChoice = "auto",
        fetch: FetchOptions | None = None,
        field: str | None = None,
        fields: Sequence[str] | None = None,
        pad: bool = False,
        pad_value: float = 0,
        drop_empty_boxes: bool = True,
        batch_size: int | None = None,
        view: ViewSpec | None = None,
        version: int | None = None,
    ) -> None:
        ranks = resolve_rank(rank, world_size)
        self.options = StreamingOptions.of(  # every keyword argument above
            locals(), rank=ranks[0], world_size=ranks[1], fetch=fetch or FetchOptions()
        )
        self.epoch = 0  # this copy's; an iteration starts at the shared epoch (`set_epoch`)
        self._shared_epoch = SharedEpoch(0)
        self.batch_allocator: Allocate | None = None
        self.run_on: RunOn | None = None  # a StreamingLoader's, with persistent workers
        self.site: Site = locate(path, self.options)
        self.columns = Columns.of(self.path, self.manifest.schema, self.options)
        self.view: View | None = None  # the samples read: a view's rows (by shard), or all
        if view is not None:
            self.view = streaming_view(self.path, self.manifest, view, storage_options)
        self._plans = EpochPlans(self.manifest, self.view)
        self._budget().check(self.path)
        self._resume = StreamResume(self.path, self.version)
        self._opened_once = Opened(self.path, self.root, self.columns, self.manifest)
        register_iterable(StreamingDataset)

    def _budget(self) -> CacheBudget:
        return CacheBudget.of(self.options, self.manifest, cached=self.site.cached is not None)

    def resident_shards(self, workers: int) -> list[npt.NDArray[np.int64]] | None:
        """The shards each rank keeps cached for good when its streams are `workers` DataLoader
        workers (0: the main process); None without a bounded cache (`residency`)."""
        return self._plans.resident(self.world_size, self.resident_budget(workers), self.options)

    def resident_budget(self, workers: int) -> int | None:
        """Bytes of resident shards each rank keeps when its streams are `workers` DataLoader
        workers (None: no shard is resident), which fix the epoch's shard order (`budget`)."""
        budget = self._budget().resident_bytes(self.world_size, workers)
        resident = self._plans.resident(self.world_size, budget, self.options)
        return budget if resident is not None else None

    def __getstate__(self) -> dict[str, Any]:
        opened, resume = copy.copy(self._opened_once), copy.copy(self._resume)  # each its own
        return {**self.__dict__, "batch_allocator": None, "_opened_once": opened, "_resume": resume}

    def close(self) -> None:
        """Drop the index map this process opened (a later iteration opens it again); iterations
        in progress keep what they hold until they end."""
        self._opened_once.close()
        self.site.close()

    def __repr__(self) -> str:
        return (
            f"StreamingDataset({self.path!r}, version={self.version}, rank={self.rank}, "
            f"world_size={self.world_size}, seed={self.seed}, epoch={self.epoch}, "
            f"shuffle_window={self.shuffle_window}, batch_size={self.batch_size})"
        )

    def set_epoch(self, epoch: int) -> None:
        """Select the order and the random draws of epoch `epoch` (an int64 >= 0) for this object
        and every copy sharing its epoch (DataLoader workers, `make_loader`'s copy): each reads
        it when its next iteration starts."""
        self.epoch = self._shared_epoch.set(epoch)

    def current_epoch(self) -> int:
        """The epoch the next iteration reads: the last `set_epoch` of any copy sharing it."""
        return self._shared_epoch.get()

    def __len__(self) -> int:
        """Samples this rank yields per epoch, over all its workers (batches: `num_batches`)."""
        return self._plans.span(self.world_size, self.drop_last)

    def num_batches(self, workers: int, progress: EpochProgress | None = None) -> int:
        """Batches this rank yields per epoch with `batch_size` set, read by `workers` DataLoader
        workers (0: the main process), or in what `progress`'s segments left of the epoch: each
        worker's stream ends with a short batch unless its samples fill the last one."""
        if self.batch_size is None:
            raise ValueError(f"{self.path}: num_batches needs a batch_size; this dataset has none")
        return self._plans.num_batches(self.options, self.batch_size, workers, progress)

    @property
    def version(self) -> int:
        """The version of the dataset read (1 for a dataset never appended to)."""
        return self.manifest.dataset_version

    def order_identity(self) -> dict[str, Any]:
        """What this dataset's samples are, as a loader's saved state names them."""
        return order_identity(self.manifest, self.view)

    def state_dict(self) -> dict[str, Any]:
        """The progress of the stream calling it: epoch, samples yielded and (in an epoch that
        `resume` resumed) its segments, as `stream_state` lays it out."""
        state = self._resume.state(epoch=self.epoch, seed=self.seed, stream=self._current_stream())
        return make_stream_state(state)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from `state_dict()` after the samples it counts; a `LoaderStateError` (a
        ValueError) names a field missing, unknown, mistyped or out of range, or another seed."""
        saved = self._resume.read(state, self.seed)
        self.set_epoch(saved.epoch)
        self._resume.load(saved)

    def resume(self, progress: EpochProgress | None) -> None:
        """Make the next iteration over `progress.epoch` read what its segments left, split over
        this layout through the first layout's plans (`elastic`; None: drop the resume pending);
        an iteration over another epoch reads it whole."""
        self._resume.resume(progress)

    def _current_stream(self) -> Stream:
        return Stream(self.rank, self.world_size, *_worker_info())

    def plan(self, stream: Stream | None = None) -> StreamPlan:
        """The windows of `stream` (default: the calling process's) in the current epoch."""
        stream = stream or self._current_stream()
        budget = self.resident_budget(stream.workers)
        return self._plans.plan(stream, self.options, budget=budget, epoch=self.epoch)

    def __iter__(self) -> Iterator[Sample]:
        """This stream's samples (or batches) of the epoch `set_epoch` last chose, read now so that
        persistent workers follow it; what it reads is settled here, before the first sample.
        With `run_on` set (a `StreamingLoader`'s persistent workers), the stream runs on into
        the next epochs, its items tagged (`run_on`)."""
        epoch = self._shared_epoch.get()
        if self.run_on is not None:
            return self.run_on.stream(self, epoch)
        return self._read(*self._begin(epoch))

    def open_epoch(self, epoch: int) -> tuple[Iterator[Sample], int]:
        """This stream's samples (or batches) of `epoch`, read as `__iter__` reads them, and
        the most samples (or batches) that a stream of this rank's layout yields in it."""
        parts, cursor = self._begin(epoch)
        stream, size = cursor.stream, self.batch_size or 1
        per_stream = self._plans.stream_batches(self.options, size, stream.workers, cursor.resumed)
        return self._read(parts, cursor), max(per_stream, default=0)

    def _begin(self, epoch: int) -> tuple[list[Part], Cursor]:
        """What this stream reads of `epoch`, settled now: the resume pending taken."""
        self.epoch = epoch
        stream = self._current_stream()
        cursor = self._resume.begin(stream, epoch)
        if cursor.resumed is None:
            plan = self.plan(stream)
            parts = plan.parts(cursor.position, plan.num_samples)
        else:
            parts = self._plans.resumed(cursor.resumed, stream, self.options, skip=cursor.position)
        return parts, cursor

    def _read(self, parts: list[Part], cursor: Cursor) -> Iterator[Sample]:
        reader = self._opened_once.reader(self.options, self.batch_allocator)
        shards = self._source([c for part in parts for c in part.chunks])
        reading = Reading.of(self.options, self.columns, self.epoch)
        yield from read_epoch(parts, shards, reader, reading, cursor)

    def _source(self, chunks: list[Chunk]) -> ShardSource:
        """The shards of `chunks`, opened for this process's stream."""
        resident, budget = self.resident_shards(_worker_info()[1]), self._budget()
        shards = Shards(self.site, budget, self.fetch, resident=resident, rows=self._plans.rows)
        return shards.open(chunks, lambda: self._opened().index)

    def _opened(self) -> DatasetFiles:
        """The dataset files, opened once per process."""
        return self._opened_once.files()

    def collate(self, samples: Sequence[Sample]) -> tuple[Any, ...]:
        """A batch of samples laid out as `Dataset.__getitems__` lays it out (numpy arrays,
        lists, `Padded`): `DataLoader(ds, batch_size=..., collate_fn=ds.collate)`."""
        rows = list(range(len(samples)))  # a stream's batch has no sample numbers to name
        return collate(self.layout, samples, rows, f"{self.path} batch", self.pad_value)
