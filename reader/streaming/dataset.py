"""`StreamingDataset`: an iterable over a dataset at a URL (or a local one), shard by shard.

Per epoch the shards are read in a seeded permutation, split over ranks and DataLoader workers
(see `_stream_plan` for the exact rule), and each stream shuffles its samples across windows of
`shuffle_window` shards. Every rank yields `ceil(N / world_size)` samples (the last rank's span
wraps to the start of the epoch, so up to `world_size - 1` samples are read twice), or with
`drop_last` `floor(N / world_size)` (up to `world_size - 1` samples are skipped): DDP ranks never
wait on each other. With `N` a multiple of `world_size` every sample is read exactly once.

Remote shards are fetched whole by background threads (ranged GETs in parallel for large ones),
`prefetch` shards ahead of need, into `cache_dir`; the manifest and index are fetched once, when
the dataset is constructed, and shared with the DataLoader workers. Local datasets are read in
place (no copy, no lock), with `io="pread"` for file systems where maps are slow (NFS).

The dataset holds the manifest and the index map; each iteration opens the shards it reads and
closes them when it ends, is closed, or is garbage-collected half-way.

`fields` chooses what a sample is, as for the map-style `Dataset` (the value of each field type,
geometry that follows the image through the transform); `collate` batches samples by the same
rules as `Dataset.__getitems__`. A remote dataset's zstd dictionaries are fetched with its index.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import (
    MANIFEST_NAME,
    AbsentFieldError,
    CorruptIndexError,
    DatasetFiles,
    FastpackError,
    Manifest,
    ShardFormatError,
    manifest_from_text,
    read_manifest,
)
from fastpack.storage import Location, default_cache_dir, is_url

from ..closing import ClosesOnExit
from ..errors import MissingFieldError
from ..fields import (
    BatchLayout,
    SampleDecoder,
    check_geometry,
    choose_fields,
    collate,
    image_field,
    plan_columns,
)
from ..fields.sample import PayloadOf
from ..image.decode import Image, decode
from ..image.draws import iter_draws
from ..image.transforms import Transform
from ..ranks import resolve_rank
from ..remote import dictionaries, read_manifest_bytes
from ..shard_files import IoMethod, ShardFile, check_io
from .cache import ShardCache
from .plan import Chunk, Stream, StreamPlan, stream_plan
from .sources import FetchOptions, LocalShards, RemoteShards, ShardSource

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
    """Samples `(image HxWx3 uint8, label int64)` of a dataset, one at a time, as an iterable.

    `fields` (default: the image and the label; `field` names the image) makes each sample a
    tuple of those fields, decoded as `Dataset` decodes them (an absent optional member is
    None); `pad`, `pad_value` and `drop_empty_boxes` are `Dataset`'s. Batch such samples with
    `DataLoader(ds, batch_size=..., collate_fn=ds.collate)`: numpy batches laid out as
    `Dataset.__getitems__` returns them.

    An `IterableDataset` for torch's DataLoader (registered as one when torch is installed):
    batch with `DataLoader(ds, batch_size=..., num_workers=...)`; batching needs a transform
    with a fixed output shape (`RandomResizedCrop`, `CenterCrop`). Call `set_epoch(e)` before
    each epoch (workers copy the dataset when they start: with `persistent_workers=True` they
    would keep the first epoch). `state_dict()` and `load_state_dict()` describe one stream
    (the process calling them: a DataLoader worker, or the main process with `num_workers=0`),
    which is what torchdata's `StatefulDataLoader` saves and restores per worker; a resumed run
    must use the same world size and worker count.

    `cache_limit` bounds the bytes of shards in the node's cache directory; each stream evicts
    the least recently used shards it does not need. It must leave room for the
    `shuffle_window + prefetch` shards that each stream of the node holds at once.

    `close()` (or leaving a `with` block) drops the index map this process opened; a later
    iteration opens it again. The shard files of an iteration belong to its iterator, which
    closes them when it is exhausted, closed or garbage-collected.
    """

    def __init__(
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
        io: IoMethod = "mmap",
        fetch: FetchOptions | None = None,
        field: str | None = None,
        fields: Sequence[str] | None = None,
        pad: bool = False,
        pad_value: float = 0,
        drop_empty_boxes: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self.transform, self.seed, self.shuffle = transform, int(seed), shuffle
        self.shuffle_window = shuffle_window
        self.prefetch = shuffle_window if prefetch is None else prefetch
        self.drop_last = drop_last
        self.pad, self.pad_value = bool(pad), float(pad_value)
        self.drop_empty_boxes = bool(drop_empty_boxes)
        self.io: IoMethod = check_io(io)
        self.fetch = fetch or FetchOptions()
        self.cache_limit = cache_limit
        self.rank, self.world_size = resolve_rank(rank, world_size)
        self._check_options()
        self.epoch = 0
        self._location: Location | None = None
        if is_url(self.path):
            self._location = Location(self.path, storage_options, self.fetch.retry)
            self.root = self._fetch_metadata(Path(cache_dir or default_cache_dir()))
        else:
            self.root = Path(self.path)
        self.manifest: Manifest = read_manifest(self.root / MANIFEST_NAME)
        schema = self.manifest.schema
        self.field: str | None = image_field(schema, field, self.path)
        self.fields: tuple[str, ...] = choose_fields(schema, fields, self.field, self.path)
        self.layout: BatchLayout = plan_columns(
            schema, self.fields, image=self.field, transform=transform, pad=self.pad
        )
        check_geometry(self.layout, transform, self.path)
        self._counts = np.array([s.samples for s in self.manifest.shards], dtype=np.int64)
        self._check_cache_limit()
        self._files: tuple[DatasetFiles, Labels] | None = None
        self._decoder: SampleDecoder | None = None
        self._stream: Stream | None = None
        self._position = 0
        self._resume: tuple[Stream, int] | None = None
        _register_with_torch()

    # -- configuration --------------------------------------------------------------------------

    def _check_options(self) -> None:
        checks = (
            ("seed", self.seed >= 0, ">= 0"),
            ("shuffle_window", self.shuffle_window >= 1, ">= 1"),
            ("prefetch", self.prefetch >= 0, ">= 0"),
            ("world_size", self.world_size >= 1, ">= 1"),
            ("rank", 0 <= self.rank < self.world_size, f"in [0, {self.world_size})"),
        )
        for name, ok, expected in checks:
            if not ok:
                raise ValueError(f"StreamingDataset {name}={getattr(self, name)!r}: "
                                 f"expected {expected}")  # fmt: skip

    def _check_cache_limit(self) -> None:
        if self.cache_limit is None or self._location is None:
            return
        largest = max((s.bytes for s in self.manifest.shards), default=0)
        needed = (self.shuffle_window + self.prefetch) * largest
        if self.cache_limit < needed:
            raise ValueError(
                f"{self.path}: cache_limit={self.cache_limit} bytes is below one stream's working "
                f"set: (shuffle_window {self.shuffle_window} + prefetch {self.prefetch}) x "
                f"{largest} bytes (largest shard) = {needed}"
            )

    def _fetch_metadata(self, cache_dir: Path) -> Path:
        """Fetch the manifest and (once per cache directory) the index and zstd dictionaries; the
        cache directory of a dataset is named after its URL and manifest, so a rebuilt dataset
        gets a fresh one."""
        location = self._location
        if location is None:
            raise ValueError("not a remote dataset")
        retry = self.fetch.retry
        text = read_manifest_bytes(location, retry)
        manifest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
        key = hashlib.sha256(location.url.encode() + b"\n" + text).hexdigest()[:16]
        root = cache_dir / key
        root.mkdir(parents=True, exist_ok=True)
        files = [(manifest.index.name, manifest.index.bytes, manifest.index.sha256)]
        files += [(d.name, d.bytes, d.sha256) for d in dictionaries(manifest)]
        for name, size, sha256 in files:
            if not _has_size(root / name, size):
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                location.download(
                    name, root / name, size=size, sha256=sha256, retry=retry,
                    threads=self.fetch.part_threads,
                )  # fmt: skip
        if not (root / MANIFEST_NAME).exists():
            tmp = root / f".{MANIFEST_NAME}.{os.getpid()}.tmp"
            tmp.write_bytes(text)
            os.replace(tmp, root / MANIFEST_NAME)
        ShardCache(root, self.cache_limit).remove_stale_downloads()
        return root

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_files"] = state["_decoder"] = None
        return state

    def close(self) -> None:
        """Drop the index map this process opened; a later iteration opens it again. Iterations
        in progress keep what they hold (their shard files and the index) until they end."""
        self._files = self._decoder = None

    def __repr__(self) -> str:
        return (
            f"StreamingDataset({self.path!r}, rank={self.rank}, world_size={self.world_size}, "
            f"seed={self.seed}, epoch={self.epoch}, shuffle_window={self.shuffle_window})"
        )

    def set_epoch(self, epoch: int) -> None:
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self.epoch = int(epoch)

    def __len__(self) -> int:
        """Samples this rank yields per epoch (over all its workers)."""
        total, world = self.manifest.num_samples, self.world_size
        return total // world if self.drop_last else -(-total // world)

    # -- state ----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The progress of the stream calling it: epoch and samples already yielded."""
        stream = self._stream or self._current_stream()
        position = self._position if self._stream is not None else 0
        if self._resume is not None:
            stream, position = self._resume
        return {"epoch": self.epoch, "position": position, "stream": list(stream),
                "seed": self.seed}  # fmt: skip

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from `state_dict()`: the next iteration starts after the samples it counts."""
        try:
            epoch, position = int(state["epoch"]), int(state["position"])
            stream = Stream(*(int(v) for v in state["stream"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{self.path}: not a StreamingDataset state: {state!r}") from e
        if int(state.get("seed", self.seed)) != self.seed:
            raise ValueError(
                f"{self.path}: state saved with seed {state['seed']}, this dataset has {self.seed}"
            )
        self.set_epoch(epoch)
        self._resume = (stream, position)

    # -- iteration ------------------------------------------------------------------------------

    def _current_stream(self) -> Stream:
        worker, workers = _worker_info()
        return Stream(self.rank, self.world_size, worker, workers)

    def plan(self, stream: Stream | None = None) -> StreamPlan:
        """The windows of `stream` (default: the calling process's) in the current epoch."""
        return stream_plan(
            self._counts, stream or self._current_stream(), seed=self.seed, epoch=self.epoch,
            shuffle=self.shuffle, window=self.shuffle_window, drop_last=self.drop_last,
        )  # fmt: skip

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
        stream = self._current_stream()
        start = self._start_position(stream)
        plan = self.plan(stream)
        self._stream, self._position = stream, start
        first, skip = plan.locate(start)
        windows = plan.windows[first:]
        source = self._source([c.shard for w in windows for c in w])
        try:
            position = 0
            for w, window in enumerate(windows, start=first):
                ids = plan.window_samples(w)[skip:]
                yield from self._read_window(ids, window, source, position)
                for k in range(len(window)):
                    source.release(position + k)
                position += len(window)
                skip = 0
        finally:
            source.close()

    def _read_window(
        self, ids: npt.NDArray[np.int64], window: tuple[Chunk, ...], source: ShardSource,
        position: int,
    ) -> Iterator[Sample]:  # fmt: skip
        files = {c.shard: source.get(position + k) for k, c in enumerate(window)}
        dataset_files, labels = self._opened()
        shard_of = dataset_files.index.shard
        count = 0 if self.transform is None else self.transform.draws
        samples = ids.tolist()
        draws = iter_draws(self.seed, self.epoch, samples, count)
        decoder = None if self.layout.image_label else self._sample_decoder(dataset_files)
        for i, sample_draws in zip(samples, draws, strict=True):
            shard_file = files.get(int(shard_of[i]))
            if shard_file is None:
                raise CorruptIndexError(
                    f"{dataset_files.index.path}: sample {i} is in shard {int(shard_of[i])}, "
                    f"the manifest's sample counts put it in shard {sorted(files)}"
                )
            if decoder is None:
                sample: Sample = (
                    self._image(dataset_files, shard_file, i, sample_draws),
                    labels[i],
                )
            else:
                members = _members(dataset_files, shard_file, i)
                sample = tuple(decoder.decode(i, members, sample_draws))
            self._position += 1  # counted before the yield: state_dict() sees it handed out
            yield sample

    def _sample_decoder(self, files: DatasetFiles) -> SampleDecoder:
        """This process's decoder of the fields asked for."""
        if self._decoder is None:
            self._decoder = SampleDecoder(
                files, self.layout, image=self.field, transform=self.transform,
                drop_empty_boxes=self.drop_empty_boxes,
                where=functools.partial(_member_name, self.path, files),
            )  # fmt: skip
        return self._decoder

    def collate(self, samples: Sequence[Sample]) -> tuple[Any, ...]:
        """A batch of samples of this dataset, laid out as `Dataset.__getitems__` lays it out
        (numpy arrays, lists, `Padded`): `DataLoader(ds, batch_size=..., collate_fn=ds.collate)`.
        """
        rows = list(range(len(samples)))  # a stream's batch has no sample numbers to name
        return collate(self.layout, samples, rows, f"{self.path} batch", self.pad_value)

    def _source(self, shards: list[int]) -> ShardSource:
        if self._location is None:
            return LocalShards(self.root, self.manifest, shards, self.io)
        cache = ShardCache(self.root, self.cache_limit)
        return RemoteShards(
            self._location, self.manifest, cache, shards, ahead=self.prefetch, io=self.io,
            options=self.fetch,
        )  # fmt: skip

    def _opened(self) -> tuple[DatasetFiles, Labels]:
        """The dataset files and a plain view of the labels, opened once per process."""
        if self._files is None:
            files = DatasetFiles(self.root)
            self._files = (files, files.index.label.view(np.ndarray))
        return self._files

    def _image(
        self, files: DatasetFiles, shard_file: ShardFile, i: int, draws: list[float] | None
    ) -> Image:
        field = self.field
        if field is None:  # never on the (image, label) path, which needs an image
            raise MissingFieldError(f"{self.path}: no image (jpeg) field; fields are {self.fields}")
        _, offset, size = files.index.locate(i, field, shard_file.size)
        data = shard_file.read(offset, size)
        try:
            image = decode(data) if self.transform is None else self.transform(data, draws, None)
        except FastpackError:
            raise
        except ValueError as e:
            raise ShardFormatError(
                f"{self.path}: sample {i} (key {files.index.key(i)}, shard "
                f"{int(files.index.shard[i])}) field {field!r} does not decode: {e}"
            ) from e
        return image


def _member_name(path: str, files: DatasetFiles, i: int, field: str) -> str:
    """How errors name sample `i`'s member of `field` in the dataset at `path`."""
    index = files.index
    return f"{path}: sample {i} (key {index.key(i)}, shard {int(index.shard[i])}) field {field!r}"


def _members(files: DatasetFiles, shard_file: ShardFile, i: int) -> PayloadOf:
    """Sample `i`'s member of a field in `shard_file`, None when it is absent."""

    def member(field: str) -> memoryview | bytes | None:
        try:
            _, offset, size = files.index.locate(i, field, shard_file.size)
        except AbsentFieldError:
            return None
        return shard_file.read(offset, size)

    return member


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
