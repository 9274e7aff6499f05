"""`StreamingDataset`: an iterable over a dataset at a URL (or a local one), shard by shard.

Per epoch the shards are read in a seeded permutation, split over ranks and DataLoader workers
(see `_stream_plan` for the exact rule), and each stream shuffles its samples across windows of
`shuffle_window` shards. Every rank yields `ceil(N / world_size)` samples (the last rank's span
wraps to the start of the epoch, so up to `world_size - 1` samples are read twice), or with
`drop_last` `floor(N / world_size)` (up to `world_size - 1` samples are skipped): DDP ranks never
wait on each other. With `N` a multiple of `world_size` every sample is read exactly once.

Remote shards are fetched whole by background threads (ranged GETs in parallel for large ones),
`prefetch` shards ahead of need, into `cache_dir`; the manifest is fetched when the dataset is
constructed, the index a shard's rows at a time before a stream opens the shard (`IndexRows`:
no O(N) download before the first sample), into a cache shared with the DataLoader workers and
the other processes of the node. Local datasets are read in place (no copy, no lock); on a
network file system (`io="auto"` chooses `pread` there) the chunks of the current and the next
window are read ahead, whole and in order, into the page cache (`ReadAhead`), or, given a
`cache_dir`, copied whole into the node's cache like a URL's shards (`MountOrigin`).

The dataset holds the manifest and the index map; each iteration opens the shards it reads and
closes them when it ends, is closed, or is garbage-collected half-way.

`fields` chooses what a sample is, as for the map-style `Dataset` (the value of each field type,
geometry that follows the image through the transform); `collate` batches samples by the same
rules as `Dataset.__getitems__`. A remote dataset's zstd dictionaries are fetched with its
manifest.
With `batch_size` each stream decodes its own batches in place instead (`window` locates each
window's samples, `reading` decodes them, one at a time or a batch at a time); the epoch lives in
shared memory (`epoch`), so that persistent DataLoader workers follow `set_epoch`. An epoch
stopped part-way resumes on another layout of ranks, workers and batch size (`elastic`); `view`
reads a view's rows only (`view_rows`).
"""

from __future__ import annotations

import functools
import hashlib
import operator
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import MANIFEST_NAME, DatasetFiles, Manifest, View, read_manifest
from fastpack.formats.manifest import manifest_digest, manifest_from_text
from fastpack.storage import Expected, Location, Transfer, default_cache_dir, is_url

from ..closing import ClosesOnExit
from ..errors import LoaderStateError
from ..fields import (
    BatchLayout,
    SampleDecoder,
    check_geometry,
    choose_fields,
    collate,
    image_field,
    plan_columns,
)
from ..file_system import on_remote_file_system
from ..image.batch import Allocate
from ..image.transforms import Transform
from ..order.schema import INT64_MAX
from ..ranks import resolve_rank
from ..remote import IndexRows, dictionaries, read_manifest_bytes
from ..shard_files import IoChoice, IoMethod, check_io, resolve_io
from ..stats.recorder import recorded_batches
from ..views import ViewSpec
from .cache import ShardCache
from .elastic import (
    EpochProgress,
    Locate,
    in_span_order,
    length,
    plan_locate,
    resumed_parts,
    resumed_streams,
)
from .epoch import SharedEpoch
from .origins import MountOrigin, ShardOrigin, UrlOrigin
from .plan import Chunk, Part, Stream, StreamPlan, stream_plan
from .prefetch import PrefetchDepth
from .readahead import ReadAhead, chunk_spans
from .reading import Span, WindowReader, sample_decoder
from .residency import rank_budget, resident_order, resident_shards
from .sources import FetchOptions, LocalShards, RemoteShards, ShardSource
from .stream_state import StreamState
from .stream_state import make_state as make_stream_state
from .stream_state import read_state as read_stream_state
from .view_rows import shard_counts, streaming_view
from .window import Window, locate_window

Sample = tuple[Any, ...]  # (image, label) by default; one value per field
Labels = npt.NDArray[np.int64]

if TYPE_CHECKING:
    # For type checkers StreamingDataset is the IterableDataset it is registered as at runtime
    # (`_register_with_torch`), so `DataLoader(StreamingDataset(...))` type-checks; at runtime it
    # derives from `object`, which keeps torch optional.
    from torch.utils.data import IterableDataset

    _Base = IterableDataset[Sample]
else:
    _Base = object


class StreamingDataset(ClosesOnExit, _Base):
    """Samples `(image HxWx3 uint8, label int64)` of a dataset, one at a time (or in batches),
    as an iterable.

    `fields` (default: the image and the label; `field` names the image) makes each sample a
    tuple of those fields, decoded as `Dataset` decodes them (an absent optional member is
    None); `pad`, `pad_value` and `drop_empty_boxes` are `Dataset`'s. Batch such samples with
    `DataLoader(ds, batch_size=..., collate_fn=ds.collate)`: numpy batches laid out as
    `Dataset.__getitems__` returns them.

    `batch_size` makes each stream (each DataLoader worker) yield batches of its own samples,
    in its order, decoded in place: `(images (B, H, W, 3) uint8, labels (B,) int64)`, or one
    value per field laid out as `Dataset.__getitems__` lays it out; a stream's last batch may
    be short. Image arrays come from `batch_allocator` when set (`make_loader` sets one that
    decodes into its shared-memory slots), else `np.empty`. Without a transform the images of a
    batch must share a size. `make_loader(ds, batch_size=...)` batches this way.

    An `IterableDataset` for torch's DataLoader (registered as one when torch is installed):
    batch with `DataLoader(ds, batch_size=..., num_workers=...)`, or `batch_size=None` with
    the dataset's `batch_size`; batching needs a transform with a fixed output shape
    (`RandomResizedCrop`, `CenterCrop`). Call `set_epoch(e)` before each epoch: the epoch is
    kept in shared memory, which the DataLoader's workers (forked or spawned, persistent or
    not) share with this object, and each iteration starts at the epoch last set.
    `state_dict()` and `load_state_dict()` describe one stream (the process calling them: a
    DataLoader worker, or the main process with `num_workers=0`) in samples, with or without
    `batch_size`, which is what torchdata's `StatefulDataLoader` saves and restores per worker;
    such a state resumes with the same world size and worker count. The state of
    `make_loader(ds, ...)` describes the whole epoch in a few integers and resumes it with any
    world size, worker count and batch size (`resume`; `elastic`).

    `view` (the name of a view beside the dataset, the path or URL of a `.fpview` file, or a
    `View`) reads only the view's samples: an epoch is its rows grouped by shard, `len()` and
    `num_batches` count them, and shards holding none of them are never fetched. A
    class-balanced view is refused: drawing balanced shares needs `Dataset(view=...)`.

    A local `path` is read in place. On a network or FUSE file system (NFS, Lustre, sshfs, ...)
    the chunks a stream is about to read are read ahead, whole and in order, by background
    threads (`ReadAhead`); given `cache_dir`, its shards are copied whole into that directory
    instead, in large sequential reads, and read there, cached and evicted as a URL's are. A
    `cache_dir` for a path on a local disk is not used.

    `cache_limit` bounds the bytes of shards in the node's cache directory (shared by the
    `LOCAL_WORLD_SIZE` ranks of a node, torchrun's variable; else one). First comes each stream's
    working set, `(shuffle_window + prefetch) x largest shard` (`prefetch` None: one window with
    a cache limit), evicted least recently used; what is left holds *resident* shards, a fixed
    set per rank (a function of the seed, the world size and the limit: `resident_shards`) that
    the rank reads every epoch and never evicts. So each epoch after the first fetches the
    dataset's bytes less the resident ones. All ranks must be given the same limit and worker
    count. A limit below one stream's working set is refused. An epoch resumed with another
    layout (`resume`) reads through the plans of the layout that began it: correct, but it does
    not favour the resident shards of the new layout until the next epoch.

    `prefetch` (default None) is how many shards a stream fetches ahead of the one it reads; None
    chooses it as the stream goes, from the download and read times it measures (at least one
    window, at most two, or one with a `cache_limit`). `fetch` sets the connections
    (`FetchOptions`).

    `close()` (or leaving a `with` block) drops the index map this process opened; a later
    iteration opens it again. The shard files of an iteration belong to its iterator, which
    closes them when it is exhausted, closed or garbage-collected.
    """

    def __init__(  # noqa: PLR0913 (public API: keyword options with defaults)
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
    ) -> None:
        self.path = os.fspath(path)
        self.transform, self.seed, self.shuffle = transform, int(seed), shuffle
        self.shuffle_window = shuffle_window
        self.prefetch = prefetch
        self.cache_limit = cache_limit
        # Shards fetched ahead of the one read: the user's `prefetch`, else chosen as the stream
        # goes (`PrefetchDepth`), up to one window ahead with a bounded cache, else two.
        self.ahead_limit = (
            prefetch
            if prefetch is not None
            else (shuffle_window if cache_limit is not None else 2 * shuffle_window)
        )
        self.drop_last = drop_last
        self.pad, self.pad_value = bool(pad), float(pad_value)
        self.drop_empty_boxes = bool(drop_empty_boxes)
        check_io(io)  # before any fetch
        self.fetch = fetch or FetchOptions()
        self.rank, self.world_size = resolve_rank(rank, world_size)
        self.batch_size = batch_size
        self._check_options()
        self.epoch = 0  # this copy's; an iteration starts at the shared epoch (`set_epoch`)
        self._shared_epoch = SharedEpoch(0)
        self.batch_allocator: Allocate | None = None
        self._location: Location | None = None
        self._index_rows: IndexRows | None = None  # a remote index, fetched shard by shard
        self._origin: ShardOrigin | None = None  # where shards are fetched from into the cache
        self._cache_root: Path | None = None  # where they are cached
        self._remote_fs = False  # a path read in place from a network file system
        if is_url(self.path):
            self._location = Location(self.path, storage_options, self.fetch.retry)
            self.root = self._fetch_metadata(Path(cache_dir or default_cache_dir()))
            self._origin, self._cache_root = UrlOrigin(self._location), self.root
        else:
            self.root = Path(self.path)
            self._remote_fs = on_remote_file_system(self.root)
        self.manifest: Manifest = read_manifest(self.root / MANIFEST_NAME)
        if self._remote_fs and cache_dir is not None:
            self._origin = MountOrigin(self.root)
            self._cache_root = self._mount_cache(Path(cache_dir))
        self.io: IoMethod = resolve_io(io, self._cache_root or self.root)
        self.field, self.fields, self.layout = self._columns(field, fields, transform)
        self.view: View | None = None  # the samples read: a view's rows (by shard), or all
        if view is not None:
            self.view = streaming_view(self.path, self.manifest, view, storage_options)
        self._counts = self._shard_counts()
        self._resident: tuple[tuple[int, int], list[Labels] | None] | None = None  # by layout
        self._check_cache_limit()
        self._files: tuple[DatasetFiles, Labels] | None = None
        self._decoder: SampleDecoder | None = None
        self._stream: Stream | None = None
        self._position = 0
        self._resume: tuple[Stream, int] | None = None
        self._progress: EpochProgress | None = None  # an epoch to resume (`resume`)
        self._segments: EpochProgress | None = None  # what the current iteration resumed
        _register_with_torch()

    # -- configuration --------------------------------------------------------------------------

    def _columns(
        self, field: str | None, fields: Sequence[str] | None, transform: Transform | None
    ) -> tuple[str | None, tuple[str, ...], BatchLayout]:
        """The image field, the fields of a sample and how they are laid out in a batch."""
        schema = self.manifest.schema
        image = image_field(schema, field, self.path)
        chosen = choose_fields(schema, fields, image, self.path)
        layout = plan_columns(schema, chosen, image=image, transform=transform, pad=self.pad)
        check_geometry(layout, transform, self.path)
        return image, chosen, layout

    def _shard_counts(self) -> Labels:
        """The samples each shard adds to an epoch: all of them, or the view's."""
        counts = np.array([s.samples for s in self.manifest.shards], dtype=np.int64)
        return counts if self.view is None else shard_counts(counts, self.view.rows)

    @property
    def _rows(self) -> Labels | None:
        """The view's rows, which an epoch's positions number; None: the dataset's."""
        return None if self.view is None else self.view.rows

    def _check_options(self) -> None:
        checks = (
            ("seed", self.seed >= 0, ">= 0"),
            ("shuffle_window", self.shuffle_window >= 1, ">= 1"),
            ("prefetch", self.prefetch is None or self.prefetch >= 0, ">= 0 or None"),
            ("world_size", self.world_size >= 1, ">= 1"),
            ("rank", 0 <= self.rank < self.world_size, f"in [0, {self.world_size})"),
            ("batch_size", self.batch_size is None or self.batch_size >= 1, ">= 1 or None"),
        )
        for name, ok, expected in checks:
            if not ok:
                raise ValueError(
                    f"StreamingDataset {name}={getattr(self, name)!r}: expected {expected}"
                )

    def _check_cache_limit(self) -> None:
        if self.cache_limit is None or self._origin is None:
            return
        largest = max((s.bytes for s in self.manifest.shards), default=0)
        needed = (self.shuffle_window + self.ahead_limit) * largest
        if self.cache_limit < needed:
            raise ValueError(
                f"{self.path}: cache_limit={self.cache_limit} bytes is below one stream's working "
                f"set: (shuffle_window {self.shuffle_window} + prefetch {self.ahead_limit}) x "
                f"{largest} bytes (largest shard) = {needed}"
            )

    def resident_shards(self, workers: int) -> list[npt.NDArray[np.int64]] | None:
        """The shards each rank keeps in its node's cache for good when its streams are
        `workers` DataLoader workers (0: the main process), None without a bounded cache of a
        dataset fetched into a cache (see `residency`)."""
        return self._resident_of(self.world_size, self.resident_budget(workers))

    def resident_budget(self, workers: int) -> int | None:
        """Bytes of resident shards each rank keeps when its streams are `workers` DataLoader
        workers; None when no shard is resident. With the world size it fixes the epoch's
        shard order (`residency.resident_order`)."""
        if self._origin is None or self.cache_limit is None:
            return None
        budget = rank_budget(
            self.cache_limit,
            world=self.world_size,
            streams=max(1, workers),
            working_shards=self.shuffle_window + self.ahead_limit,
            largest=max((s.bytes for s in self.manifest.shards), default=0),
        )
        return budget if self._resident_of(self.world_size, budget) is not None else None

    def _resident_of(self, world: int, budget: int | None) -> list[Labels] | None:
        """The resident shards of each of `world` ranks keeping `budget` bytes each; None when
        there are none."""
        if budget is None:
            return None
        if self._resident is None or self._resident[0] != (world, budget):
            sizes = np.array([s.bytes for s in self.manifest.shards], dtype=np.int64)
            resident = resident_shards(
                self._counts,
                sizes,
                seed=self.seed,
                world=world,
                budget=budget,
                span=self._span(world),
            )
            self._resident = ((world, budget), resident if any(len(r) for r in resident) else None)
        return self._resident[1]

    def _fetch_metadata(self, cache_dir: Path) -> Path:
        """Fetch the manifest, (once per cache directory) the zstd dictionaries, and what opening
        the index reads: its rows come shard by shard, before a stream opens the shard
        (`IndexRows`). The cache directory of a dataset is named after its URL and manifest, so
        a rebuilt dataset gets a fresh one."""
        location = self._location
        if location is None:
            raise ValueError("not a remote dataset")
        retry = self.fetch.retry
        text = read_manifest_bytes(location, retry)
        manifest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
        key = hashlib.sha256(location.url.encode() + b"\n" + text).hexdigest()[:16]
        root = cache_dir / key
        root.mkdir(parents=True, exist_ok=True)
        files = [(d.name, d.bytes, d.sha256) for d in dictionaries(manifest)]
        for name, size, sha256 in files:
            if not _has_size(root / name, size):
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                location.download(
                    name,
                    root / name,
                    Expected(size=size, sha256=sha256),
                    Transfer(retry=retry, threads=self.fetch.part_threads),
                )
        self._index_rows = IndexRows(location, manifest, root)
        if not (root / MANIFEST_NAME).exists():
            tmp = root / f".{MANIFEST_NAME}.{os.getpid()}.tmp"
            tmp.write_bytes(text)
            os.replace(tmp, root / MANIFEST_NAME)
        ShardCache(root, self.cache_limit).remove_stale_downloads()
        return root

    def _mount_cache(self, cache_dir: Path) -> Path:
        """The cache directory of this mounted dataset's shards, named after its real path and
        its manifest (a rebuilt dataset gets a fresh one); downloads left by processes that
        ended are removed."""
        text = (self.root / MANIFEST_NAME).read_bytes()
        where = os.path.realpath(self.root).encode()
        root = cache_dir / hashlib.sha256(where + b"\n" + text).hexdigest()[:16]
        root.mkdir(parents=True, exist_ok=True)
        ShardCache(root, self.cache_limit).remove_stale_downloads()
        return root

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_files"] = state["_decoder"] = state["batch_allocator"] = None
        return state

    def close(self) -> None:
        """Drop the index map this process opened; a later iteration opens it again. Iterations
        in progress keep what they hold (their shard files and the index) until they end."""
        self._files = self._decoder = None
        if self._index_rows is not None:
            self._index_rows.close()

    def __repr__(self) -> str:
        return (
            f"StreamingDataset({self.path!r}, rank={self.rank}, world_size={self.world_size}, "
            f"seed={self.seed}, epoch={self.epoch}, shuffle_window={self.shuffle_window}, "
            f"batch_size={self.batch_size})"
        )

    def set_epoch(self, epoch: int) -> None:
        """Select the order and the random draws of epoch `epoch`, for this object and every
        copy that shares its epoch (DataLoader workers, persistent or not, and `make_loader`'s
        copy): each reads it when its next iteration starts. The shared epoch is an int64:
        `epoch` must be in [0, 2**63 - 1]."""
        value = operator.index(epoch)  # an integer: a TypeError for a float or a string
        if not 0 <= value <= INT64_MAX:
            raise ValueError(f"epoch must be >= 0 and at most 2**63 - 1, got {epoch}")
        self.epoch = value
        self._shared_epoch.set(self.epoch)

    def __len__(self) -> int:
        """Samples this rank yields per epoch (over all its workers; `num_batches` counts the
        batches)."""
        return self._span(self.world_size)

    def _span(self, world: int) -> int:
        """Samples each of `world` ranks reads per epoch."""
        total = int(self._counts.sum())
        return total // world if self.drop_last else -(-total // world)

    def num_batches(self, workers: int, progress: EpochProgress | None = None) -> int:
        """Batches this rank yields per epoch with `batch_size` set, read by `workers` DataLoader
        workers (0: the main process), or, given `progress`, in what its segments left of the
        epoch: each worker's stream ends with a short batch unless its samples fill the last
        one."""
        if self.batch_size is None:
            raise ValueError(f"{self.path}: num_batches needs a batch_size; this dataset has none")
        segments = () if progress is None else progress.segments
        locate: Locate = in_span_order  # no segments: nothing to locate
        if progress is not None and segments:
            plan_of = functools.partial(
                self._plan, budget=progress.resident_budget, epoch=progress.epoch
            )
            locate = plan_locate(segments[0], plan_of)
        streams = resumed_streams(
            int(self._counts.sum()),
            segments,
            self.world_size,
            workers,
            self.drop_last,
            locate=locate,
        )
        per_rank, size = max(1, workers), self.batch_size
        own = streams[self.rank * per_rank : (self.rank + 1) * per_rank]
        return sum(-(-length(s) // size) for s in own)

    def current_epoch(self) -> int:
        """The epoch the next iteration reads: the last `set_epoch` of this object or any copy
        sharing its epoch."""
        return self._shared_epoch.get()

    def order_identity(self) -> dict[str, Any]:
        """What this dataset's samples are, as a loader's saved state names them: the manifest's
        digest and the view (name and digest)."""
        view = self.view
        return {
            "dataset": manifest_digest(self.manifest),
            "view": None if view is None else {"name": view.name, "digest": view.digest()},
        }

    # -- state ----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The progress of the stream calling it: epoch and samples already yielded (in an
        epoch resumed by `resume`, also its segments: see `elastic`), as `stream_state` lays
        it out."""
        stream = self._stream or self._current_stream()
        position = self._position if self._stream is not None else 0
        progress = self._segments
        if self._resume is not None:
            (stream, position), progress = self._resume, self._progress
        if progress is None:
            progress = EpochProgress(epoch=self.epoch, segments=(), resident_budget=None)
        state = StreamState(
            epoch=self.epoch, position=position, stream=stream, seed=self.seed, progress=progress
        )
        return make_stream_state(state)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from `state_dict()`: the next iteration starts after the samples it counts.
        Every field is checked first: a `LoaderStateError` (a ValueError) names the one that is
        missing, unknown, of another type or out of range, or a seed that differs."""
        saved = read_stream_state(state, where=self.path)
        if saved.seed != self.seed:
            raise LoaderStateError(
                f"{self.path}: StreamingDataset state saved with seed {saved.seed}, this "
                f"dataset has seed {self.seed}"
            )
        self.set_epoch(saved.epoch)
        self._resume = (saved.stream, saved.position)
        self._progress = saved.progress

    def resume(self, progress: EpochProgress | None) -> None:
        """Make the next iteration over `progress.epoch` read what its segments left of it,
        split over this dataset's world size and the iteration's workers (`elastic`); an
        iteration over another epoch reads it whole and drops `progress` (None: drop the
        resume pending). A resumed epoch reads through its first layout's plans: this layout's
        resident shards stay cached but are not favoured until the next epoch."""
        for segment in () if progress is None else progress.segments:
            segment.check()
        self._progress, self._resume = progress, None

    # -- iteration ------------------------------------------------------------------------------

    def _current_stream(self) -> Stream:
        worker, workers = _worker_info()
        return Stream(self.rank, self.world_size, worker, workers)

    def plan(self, stream: Stream | None = None) -> StreamPlan:
        """The windows of `stream` (default: the calling process's) in the current epoch."""
        stream = stream or self._current_stream()
        return self._plan(stream, self.resident_budget(stream.workers))

    def _plan(self, stream: Stream, budget: int | None, epoch: int | None = None) -> StreamPlan:
        """The plan of `stream` in `epoch` (default: this copy's) when each rank of its layout
        keeps `budget` bytes of resident shards (None: none), which fixes the epoch's shard
        order."""
        epoch = self.epoch if epoch is None else epoch
        resident = self._resident_of(stream.world, budget)
        order = None
        if resident is not None:
            order = resident_order(
                self._counts,
                resident,
                seed=self.seed,
                epoch=epoch,
                span=max(1, self._span(stream.world)),
                shuffle=self.shuffle,
            )
        return stream_plan(
            self._counts,
            stream,
            seed=self.seed,
            epoch=epoch,
            shuffle=self.shuffle,
            window=self.shuffle_window,
            drop_last=self.drop_last,
            order=order,
            rows=self._rows,
        )

    def _start_position(self, stream: Stream) -> int:
        if self._resume is None:
            return 0
        saved, position = self._resume
        self._resume = None
        if saved != stream:
            raise ValueError(
                f"{self.path}: state saved by {saved.describe()}, resumed by "
                f"{stream.describe()}: resume with the same world size and worker count"
            )
        return position

    def __iter__(self) -> Iterator[Sample]:
        """This stream's samples of the epoch that `set_epoch` last chose (read now, so that
        persistent workers follow it), one at a time or, with `batch_size`, in batches; what
        it reads is settled here, before the first sample."""
        self.epoch = self._shared_epoch.get()
        stream = self._current_stream()
        start = self._start_position(stream)
        progress, self._progress = self._progress, None
        if progress is not None and (progress.epoch != self.epoch or not progress.segments):
            progress = None
        self._stream, self._position, self._segments = stream, start, progress
        if progress is None:
            plan = self.plan(stream)
            parts = plan.parts(start, plan.num_samples)
        else:
            parts = resumed_parts(
                progress,
                stream,
                total=int(self._counts.sum()),
                drop_last=self.drop_last,
                plan_of=functools.partial(self._plan, budget=progress.resident_budget),
                skip=start,
            )
        return self._read(parts)

    def _read(self, parts: list[Part]) -> Iterator[Sample]:
        source = self._source([c for part in parts for c in part.chunks])
        try:
            windows = self._windows(parts, source)
            if self.batch_size is None:
                yield from self._samples(windows, source)
            else:
                yield from recorded_batches(self._batches(windows, source, self.batch_size))
        finally:
            source.close()

    def _windows(self, parts: list[Part], source: ShardSource) -> Iterator[Window]:
        """The samples of `parts`, a window each, located when it is reached, after its shards
        are opened."""
        files, _ = self._opened()
        draws = 0 if self.transform is None else self.transform.draws
        image = self.field if self.layout.image_label else None  # byte ranges looked up ahead
        position = 0
        for part in parts:
            chunks = part.chunks
            positions = range(position, position + len(chunks))
            shard_files = {c.shard: source.get(p) for c, p in zip(chunks, positions, strict=True)}
            ids = part.samples()
            yield locate_window(
                files,
                ids,
                shard_files,
                positions,
                image=image,
                seed=self.seed,
                epoch=self.epoch,
                draws=draws,
            )
            files.index.release()  # on to the next window: unmap the index pages read so far
            position += len(chunks)

    def _samples(self, windows: Iterator[Window], source: ShardSource) -> Iterator[Sample]:
        reader = self._reader()
        for window in windows:
            for k in range(len(window)):
                sample = reader.sample(window, k)
                self._position += 1  # counted before the yield: state_dict() sees it handed out
                yield sample
            _release(source, window)

    def _batches(
        self, windows: Iterator[Window], source: ShardSource, size: int
    ) -> Iterator[tuple[Any, ...]]:
        """Batches of `size` samples in reading order, across window boundaries (the last one
        may be short); a window's shards are released after the batch that holds its last
        samples is decoded."""
        reader = self._reader()
        spans: list[Span] = []
        filled = 0
        for window in windows:
            if not len(window):
                _release(source, window)
            start = 0
            while start < len(window):
                stop = min(len(window), start + size - filled)
                spans.append(Span(window, start, stop))
                filled, start = filled + stop - start, stop
                if filled == size:
                    yield self._batch(reader, spans, source)
                    spans, filled = [], 0
        if spans:
            yield self._batch(reader, spans, source)

    def _batch(self, reader: WindowReader, spans: list[Span], source: ShardSource) -> Sample:
        batch = reader.batch(spans)
        for span in spans:
            if span.stop == len(span.window):
                _release(source, span.window)
        self._position += sum(span.stop - span.start for span in spans)  # before the yield
        return batch

    def _reader(self) -> WindowReader:
        """The decoder of this iteration's samples (batch arrays from `batch_allocator`)."""
        files, _ = self._opened()
        decoder = None if self.layout.image_label else self._sample_decoder(files)
        return WindowReader(
            path=self.path,
            files=files,
            layout=self.layout,
            image=self.field,
            transform=self.transform,
            decoder=decoder,
            allocate=self.batch_allocator or _new_array,
            pad_value=self.pad_value,
        )

    def _sample_decoder(self, files: DatasetFiles) -> SampleDecoder:
        """This process's decoder of the fields asked for."""
        if self._decoder is None:
            self._decoder = sample_decoder(
                self.path,
                files,
                self.layout,
                image=self.field,
                transform=self.transform,
                drop_empty_boxes=self.drop_empty_boxes,
            )
        return self._decoder

    def collate(self, samples: Sequence[Sample]) -> tuple[Any, ...]:
        """A batch of samples of this dataset, laid out as `Dataset.__getitems__` lays it out
        (numpy arrays, lists, `Padded`): `DataLoader(ds, batch_size=..., collate_fn=ds.collate)`.
        """
        rows = list(range(len(samples)))  # a stream's batch has no sample numbers to name
        return collate(self.layout, samples, rows, f"{self.path} batch", self.pad_value)

    def _source(self, chunks: list[Chunk]) -> ShardSource:
        shards = [c.shard for c in chunks]
        if self._origin is None or self._cache_root is None:
            readahead = None
            if self._remote_fs and self.io == "pread":
                rows = self._rows  # a view's chunks number its rows: read ahead the rows they span
                if rows is not None:
                    chunks = [
                        Chunk(c.shard, int(rows[c.start]), int(rows[c.stop - 1]) + 1)
                        for c in chunks
                    ]
                readahead = ReadAhead(
                    chunk_spans(self._opened()[0].index, chunks),
                    depth=2 * self.shuffle_window,
                    threads=self.shuffle_window,
                )
            return LocalShards(self.root, self.manifest, shards, self.io, readahead)
        cache = ShardCache(self._cache_root, self.cache_limit)
        resident = self.resident_shards(_worker_info()[1]) or []
        keep = [self.manifest.shards[s].name for shards in resident for s in shards.tolist()]
        depth = PrefetchDepth(
            window=self.shuffle_window, limit=self.ahead_limit, fixed=self.prefetch is not None
        )
        if self._index_rows is not None:  # the first window's rows (one shard) beside its download
            self._index_rows.fetch_ahead(shards[:1])
        return RemoteShards(
            self._origin,
            self.manifest,
            cache,
            shards,
            depth=depth,
            io=self.io,
            options=self.fetch,
            keep=keep,
            before_open=None if self._index_rows is None else self._index_rows.ensure,
        )

    def _opened(self) -> tuple[DatasetFiles, Labels]:
        """The dataset files and a plain view of the labels, opened once per process."""
        if self._files is None:
            files = DatasetFiles(self.root)
            self._files = (files, files.index.label.view(np.ndarray))
        return self._files


def _release(source: ShardSource, window: Window) -> None:
    """Close the shards of `window` (read to its end)."""
    for position in window.positions:
        source.release(position)


def _new_array(shape: tuple[int, ...]) -> npt.NDArray[np.uint8]:
    return np.empty(shape, np.uint8)


def _has_size(path: Path, size: int) -> bool:
    try:
        return path.stat().st_size == size
    except FileNotFoundError:
        return False


def _worker_info() -> tuple[int, int]:
    """`(worker id, number of workers)` inside a DataLoader worker, else `(0, 1)`."""
    data: Any = sys.modules.get("torch.utils.data")
    info = data.get_worker_info() if data is not None else None
    return (0, 1) if info is None else (int(info.id), int(info.num_workers))


def _register_with_torch() -> None:
    """Make DataLoader treat StreamingDataset as an IterableDataset (an ABC registration)."""
    try:
        from torch.utils.data import IterableDataset  # noqa: PLC0415 - torch is optional
    except ImportError:
        return
    if not issubclass(StreamingDataset, IterableDataset):
        IterableDataset.register(StreamingDataset)
