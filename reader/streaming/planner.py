"""The plans of a streaming dataset's epochs (`EpochPlans`): which samples each stream reads,
in what order, with which shards kept resident in the node's cache, from the epoch's start
(`plan`) or from where a saved progress left it (`elastic`)."""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from fastpack.formats import Manifest, View

from .elastic import (
    EpochProgress,
    Locate,
    in_span_order,
    length,
    plan_locate,
    resumed_parts,
    resumed_streams,
)
from .options import StreamingOptions
from .plan import Part, Stream, StreamPlan, stream_plan
from .residency import resident_order, resident_shards
from .view_rows import shard_counts

IntArray = npt.NDArray[np.int64]


class EpochPlans:
    """The epochs of the dataset `manifest` describes, or of its view `view` (an epoch is then
    the view's rows, grouped by shard). The order comes from the `StreamingOptions` each call
    is given (seed, shuffle, shuffle_window, drop_last); the resident shards of the last layout
    asked for are kept. Pickled, it carries its inputs only (shared with the dataset's)."""

    def __init__(self, manifest: Manifest, view: View | None) -> None:
        self.manifest, self.view = manifest, view
        counts = np.array([s.samples for s in manifest.shards], dtype=np.int64)
        self.rows = None if view is None else view.rows  # which an epoch's positions number
        self.counts = counts if view is None else shard_counts(counts, view.rows)
        self._resident: tuple[tuple[int, ...], list[IntArray] | None] | None = None

    def __reduce__(self) -> tuple[type[EpochPlans], tuple[Manifest, View | None]]:
        return EpochPlans, (self.manifest, self.view)

    @property
    def total(self) -> int:
        """Samples in an epoch."""
        return int(self.counts.sum())

    def span(self, world: int, drop_last: bool) -> int:
        """Samples each of `world` ranks reads per epoch."""
        return self.total // world if drop_last else -(-self.total // world)

    def resident(
        self, world: int, budget: int | None, options: StreamingOptions
    ) -> list[IntArray] | None:
        """The resident shards of each of `world` ranks keeping `budget` bytes each (see
        `residency`); None when there are none."""
        if budget is None:
            return None
        key = (world, budget, options.seed, int(options.drop_last))
        if self._resident is None or self._resident[0] != key:
            sizes = np.array([s.bytes for s in self.manifest.shards], dtype=np.int64)
            resident = resident_shards(
                self.counts,
                sizes,
                seed=options.seed,
                world=world,
                budget=budget,
                span=self.span(world, options.drop_last),
            )
            self._resident = (key, resident if any(len(r) for r in resident) else None)
        return self._resident[1]

    def plan(
        self, stream: Stream, options: StreamingOptions, *, budget: int | None, epoch: int
    ) -> StreamPlan:
        """The plan of `stream` in `epoch` when each rank of its layout keeps `budget` bytes of
        resident shards (None: none), which fixes the epoch's shard order."""
        resident = self.resident(stream.world, budget, options)
        order = None
        if resident is not None:
            order = resident_order(
                self.counts,
                resident,
                seed=options.seed,
                epoch=epoch,
                span=max(1, self.span(stream.world, options.drop_last)),
                shuffle=options.shuffle,
            )
        return stream_plan(
            self.counts,
            stream,
            seed=options.seed,
            epoch=epoch,
            shuffle=options.shuffle,
            window=options.shuffle_window,
            drop_last=options.drop_last,
            order=order,
            rows=self.rows,
        )

    def resumed(
        self, progress: EpochProgress, stream: Stream, options: StreamingOptions, *, skip: int
    ) -> list[Part]:
        """What `stream` reads of what `progress` left of its epoch, less its first `skip`
        samples, through the plans of the epoch's first layout (`elastic`)."""
        return resumed_parts(
            progress,
            stream,
            total=self.total,
            drop_last=options.drop_last,
            plan_of=functools.partial(
                self.plan, options=options, budget=progress.resident_budget, epoch=progress.epoch
            ),
            skip=skip,
        )

    def num_batches(
        self,
        options: StreamingOptions,
        batch_size: int,
        workers: int,
        progress: EpochProgress | None,
    ) -> int:
        """Batches of `batch_size` that rank `options.rank` yields, read by `workers`
        DataLoader workers (0: the main process), in what `progress`'s segments left of the
        epoch (None, or no segments: all of it)."""
        return sum(self.stream_batches(options, batch_size, workers, progress))

    def stream_batches(
        self,
        options: StreamingOptions,
        batch_size: int,
        workers: int,
        progress: EpochProgress | None,
    ) -> list[int]:
        """The batches of each stream of rank `options.rank` (`num_batches`), by worker."""
        segments = () if progress is None else progress.segments
        locate: Locate = in_span_order  # no segments: nothing to locate
        if progress is not None and segments:
            plan_of = functools.partial(
                self.plan, options=options, budget=progress.resident_budget, epoch=progress.epoch
            )
            locate = plan_locate(segments[0], plan_of)
        streams = resumed_streams(
            self.total, segments, options.world_size, workers, options.drop_last, locate=locate
        )
        per_rank = max(1, workers)
        own = streams[options.rank * per_rank : (options.rank + 1) * per_rank]
        return [-(-length(s) // batch_size) for s in own]
