"""NVIDIA DALI as the reader: a dataset's tar shards and `.idx` files through
`fn.readers.webdataset` (record shards, TFRecord files of Examples, through
`fn.readers.tfrecord`: images from `image/encoded`, labels from `image/class/label`, the other
fields from `fastpack/<field>`), decoded on the CPU (`device="cpu"`) or on the GPU
(`device="gpu"`).

    loader = make_dali_loader("data/train", batch_size=256, transform=RandomResizedCrop(224))
    for epoch in range(epochs):
        for images, labels in loader:  # uint8 (B, 224, 224, 3) and int64 (B,), on the CPU
            ...

Extra fields of a version-2 dataset come as a third element, a dict by field name (fields.py
says how each is returned; a mask is cropped and flipped with its image):

    loader = make_dali_loader(
        "data/seg", batch_size=64, transform=RandomResizedCrop(224), fields=("seg.png", "txt")
    )
    for images, labels, fields in loader:
        masks = fields["seg.png"]  # uint8 (B, 224, 224, C), aligned with `images`
        captions = [bytes(t.numpy()).decode() for t in fields["txt"]]

Two sources of samples, the same graph after them (decode, resize, crop, flip, normalize):

- a path: DALI's own reader (`fn.readers.webdataset`, `fn.readers.tfrecord`) chooses the order
  (its shuffle: shard files reshuffled each epoch, samples drawn from a buffer of
  `initial_fill`). It made the figures of benchmarks/gpu/GPU.md, but cannot start mid-epoch,
  follow `set_epoch` or read a view.
- a `Dataset` (what `make_loader(dataset, loader="dali")` passes): fastpack's order, fed through
  `fn.external_source` (feed.py) by the torch loader's `EpochBatchSampler` with the same seed,
  shuffle, drop_last and ranks, so DALI reads the torch loader's batches sample for sample,
  honours the Dataset's view (a class-balanced one too), follows `set_epoch`, and resumes from
  either loader's `state_dict()` with any ranks, threads and batch size. The feed costs about
  5 us of CPU per sample, DALI's CPU path about 4.5 ms per image either way: the same images/s
  on the CPU (benchmarks/gpu/DALI.md). A path keeps DALI's reader because the GPU figures were
  measured with it, where the feed's Python work per sample has not been measured yet.

    loader = make_loader(Dataset("data/train", transform=RandomResizedCrop(224)),
                         batch_size=256, loader="dali")
    loader.load_state_dict(saved)  # from this loader or the torch one
    for images, labels in loader: ...
    saved = loader.state_dict()

Sharding and epoch length. Over a path, rank `r` of `n` reads DALI shard `r` of `n` (samples
are split over all shard files concatenated); over a `Dataset`, every `n`-th position of the
epoch's order from `r` (`EpochBatchSampler`). `r` and `n` come from the arguments (`rank`,
`world_size`), else from
torch.distributed, else from RANK and WORLD_SIZE. Every rank yields the same number of batches
per epoch, so DDP never waits on a rank that ran out:

- `drop_last=False`: each rank yields `ceil(N / n)` samples per epoch, in
  `ceil(ceil(N / n) / batch_size)` batches whose last one may be partial. When `n` does not
  divide `N`, a rank whose share is one sample short repeats a sample once (DALI's
  `pad_last_batch`: its last; the sampler: the order's first). Across ranks every sample is
  seen exactly once per epoch, plus those repeats. A resumed epoch counts what is left of it.
- `drop_last=True`: each rank yields `floor(floor(N / n) / batch_size)` full batches; the rest
  of its share is skipped that epoch.

Host memory. DALI's decoded images come in every size; glibc's malloc, which raises its mmap
threshold as it goes, then keeps them in fragmenting heap arenas and resident memory drifts by tens
of MiB between epochs. `make_dali_loader` therefore fixes the threshold
(`DaliOptions.malloc_mmap_threshold`, default 256 KiB, process-wide; `None` or a
`MALLOC_MMAP_THRESHOLD_` environment variable leaves malloc alone). benchmarks/gpu/DALI.md has the
resident memory over 25 epochs with and without it.

The test suite runs the CPU path (it needs no GPU). The GPU path (`DaliOptions(device="gpu")`:
nvJPEG decode with `device="mixed"`, resize and `crop_mirror_normalize` on the GPU, float32 NCHW
out) was run and checked against the CPU path on an H100: labels, shapes and pixels
(benchmarks/gpu/GPU.md).

DALI and torch are imported when a loader is made, not when this module is imported.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from fastpack.formats import (
    DatasetFiles,
    DatasetNotFoundError,
    FieldCodec,
    TruncatedFileError,
    feature_name,
)

from ..closing import ClosesOnExit
from ..errors import DaliReadError, MissingDependencyError, MissingFieldError
from ..image.transforms import Transform
from ..map_style.dataset import Dataset
from ..order.reading import EpochReading
from ..order.sampler import EpochBatchSampler, EpochSource
from ..order.state import Progress
from ..ranks import local_device_id, resolve_rank
from ..shard_files import IoChoice, resolve_io
from ..stats import LoaderMeter, LoaderStats
from .feed import FedFields, SampleFeed
from .fields import SAMPLE_INDEX, FieldBatch, output_names, plan_fields
from .labels import parse_labels, record_labels
from .malloc import fix_mmap_threshold
from .options import LABEL_FIELD, READER_NAME, DaliOptions, PipelineOptions
from .transforms import DaliTransform, dali_transform

if TYPE_CHECKING:
    import torch

# What a loader yields: (images, labels), or (images, labels, fields) when it reads fields.
Batch = tuple[Any, ...]


def _dali_iterator(options: PipelineOptions, source: str, feed: SampleFeed | None = None) -> Any:
    """A `DALIGenericIterator` over a new pipeline; it builds the pipeline and reads one batch
    (DALI's errors there, on damaged files of dataset `source`, raise `DaliReadError`). Over
    `feed` it only builds the pipeline: DALI asks the feed for batches once an iteration has
    begun, ends its epoch when the feed does (any last batch as it is) and is reset by the
    loader, never by itself (the next epoch's batches depend on `set_epoch` and on a resume)."""
    try:
        from nvidia.dali.plugin.base_iterator import LastBatchPolicy  # noqa: PLC0415 -- optional: DALI
        from nvidia.dali.plugin.pytorch import DALIGenericIterator  # noqa: PLC0415 -- optional: DALI

        from .pipeline import build_pipeline  # noqa: PLC0415 -- optional: DALI
    except ImportError as e:
        raise MissingDependencyError(
            f"the DALI reader needs NVIDIA DALI and torch (pip install 'fastpack[dali,torch]'): {e}"
        ) from e
    pipeline = build_pipeline(options, feed)
    if feed is not None:
        names = output_names(options.fields, fed=True)
        return DALIGenericIterator([pipeline], names, prepare_first_batch=False)
    try:
        return DALIGenericIterator(
            [pipeline],
            output_names(options.fields, options.records),
            reader_name=READER_NAME,
            last_batch_policy=LastBatchPolicy.DROP if options.drop_last else LastBatchPolicy.FILL,
            auto_reset=True,
        )
    except RuntimeError as e:
        raise _read_error(source, e) from e


_DALI_DETAIL_ENDS = ("C++ context", "Stacktrace")  # what follows is DALI's own source and stack
_DALI_BOILERPLATE = ("Current pipeline object", "Critical error")


def _read_error(source: str, error: RuntimeError) -> DaliReadError:
    """DALI's error, which names the operator and the file but buries them in its traceback and
    C++ context, as a `DaliReadError` that leads with the dataset."""
    text = str(error)
    operator = re.search(r"operator `([^`]+)`", text)
    found = []
    for raw in text.split("encountered:", 1)[-1].splitlines():
        line = raw.strip()
        if line.startswith(_DALI_DETAIL_ENDS):
            break
        if line and not line.startswith(_DALI_BOILERPLATE):
            found.append(line)
    where = f" in {operator.group(1)}" if operator else ""
    return DaliReadError(
        f"{source}: DALI failed{where}: {' '.join(found) or text.strip()} "
        f"(`fastpack verify --decode {source}` lists damaged files)"
    )


def _samples_per_epoch(num_samples: int, num_shards: int, batch_size: int, drop_last: bool) -> int:
    """What one rank yields per epoch (the module docstring's last-batch policy)."""
    if drop_last:
        return num_samples // num_shards // batch_size * batch_size
    return -(-num_samples // num_shards)


class DaliLoader(ClosesOnExit):
    """One rank's `(images, labels)` batches, epoch after epoch: `for images, labels in loader`;
    with extra fields `(images, labels, fields)` (`options.fields`).

    `images`: uint8 (B, size, size, 3) CPU tensor with `device="cpu"`; float32 (B, 3, size, size)
    normalized with `mean`/`std` on the GPU with `DaliOptions(device="gpu")`. `labels`: int64
    (B,) parsed from
    the samples' `cls` members (record shards: `image/class/label`; fed samples: the index's),
    on the images' device.
    `fields`: each extra field's values by name (fields.py); `codecs` decompress its zstd
    fields. `len(loader)` is the number of batches per epoch, the same on every rank. DALI's
    own errors on damaged files are raised as `DaliReadError`, after which the loader is
    closed. Made by `make_dali_loader`.

    Over DALI's reader (`feed` None) each `iter()` starts a new epoch; DALI cannot rewind, so
    an epoch left unfinished is first read to its end. DALI counts epochs itself: when
    `epoch_source` is set, an epoch it names other than 0 must be the one DALI starts, else
    ValueError.

    Over a `feed` (fastpack's order, feed.py) each `iter()` reads the dataset's epoch
    (`set_epoch`) in the order of its sampler, the torch loader's: from the start, or where
    `load_state_dict` says; `len(loader)` is the number of batches of that iteration. An
    iteration left unfinished is dropped with the pipeline that prefetched it. `state_dict()`
    and `load_state_dict()` take the torch loader's state (`fastpack.reader.order.state`).
    """

    def __init__(
        self,
        options: PipelineOptions,
        *,
        num_samples: int,
        source: str,
        codecs: Mapping[str, FieldCodec] | None = None,
        feed: SampleFeed | None = None,
    ) -> None:
        self.options = options
        self.codecs = dict(codecs or {})
        self.num_samples = num_samples
        self.feed = feed
        self.epoch_source: EpochSource | None = None
        # `make_loader` sets the Dataset's fields: batches then come as one value per field in
        # this order (the image field's images, the label field's labels, the others' values)
        self.order: tuple[str, ...] | None = None
        self._source = source
        self._iterator: Any = _dali_iterator(options, source, feed)
        self._in_epoch = False
        self._epochs_started = 0
        self._ended = False  # the fed pipeline ended its epoch: reset it before the next
        # the fed iterations: the current one's batches handed out, the state
        self._order = None if feed is None else EpochReading(feed.sampler, source)
        self._fed_fields = None
        self._meter = LoaderMeter(None, None)  # the trainer's side: DALI reports no stages
        if feed is not None:
            self._labels_of = np.asarray(feed.dataset.labels)
            if options.fields:
                self._fed_fields = FedFields(feed.dataset, options.fields, self.codecs)

    @property
    def samples_per_epoch(self) -> int:
        """The samples this rank yields per epoch (fed: in the next or current iteration)."""
        if self.feed is not None:
            return self.feed.sampler.samples_per_rank()
        o = self.options
        return _samples_per_epoch(self.num_samples, o.num_shards, o.batch_size, o.drop_last)

    @property
    def batch_size(self) -> int:
        return self.options.batch_size

    @property
    def rank(self) -> int:
        """This loader's rank (DALI's shard), of `world_size`."""
        return self.options.shard_id

    @property
    def world_size(self) -> int:
        return self.options.num_shards

    def __len__(self) -> int:
        if self.feed is not None:
            return len(self.feed.sampler)
        return math.ceil(self.samples_per_epoch / self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        if self._iterator is None:
            raise ValueError(f"{self._source}: this DALI loader is closed")
        if self.feed is not None:
            return self._meter.watch(self._fed_epoch(self._begin(self.feed)))
        if self._in_epoch:
            while self._next() is not None:
                pass
        self._check_epoch(self._epochs_started)
        self._epochs_started += 1
        self._in_epoch = True
        return self._meter.watch(self._epoch())

    def stats(self) -> LoaderStats:
        """What the loader did since the previous call (the first: since the first batch was
        asked for): the trainer's wait, its batches and samples, and a verdict. DALI's pipeline
        reports no per-thread or per-stage times and no byte counts: `workers` is empty and
        the byte and shard counts are None."""
        return self._meter.stats()

    def _check_epoch(self, starting: int) -> None:
        wanted = 0 if self.epoch_source is None else self.epoch_source.epoch
        if wanted not in (0, starting):
            raise ValueError(
                f"{self._source}: the dataset is at epoch {wanted} (set_epoch) but DALI is "
                f"starting its epoch {starting}: DALI counts epochs itself, one per pass over "
                "the loader from 0, and cannot start at another"
            )

    def _begin(self, feed: SampleFeed) -> Progress:
        """Start an iteration over the feed: a new pipeline if the current one holds batches
        of an unfinished one, a reset if it finished its epoch."""
        if self._in_epoch:
            self._rebuild()
        progress = self._reading("an iteration").begin()
        feed.begin()
        if progress.batches == 0:  # nothing to read: DALI is not asked
            feed.stop()
            return progress
        if self._ended:
            self._iterator.reset()  # DALI asks the feed for the new iteration's first batches
            self._ended = False
        self._in_epoch = True
        return progress

    def _rebuild(self) -> None:
        """Drop the pipeline and the batches it prefetched; build a new one."""
        self._iterator = None
        self._iterator = _dali_iterator(self.options, self._source, self.feed)
        self._in_epoch = self._ended = False

    def _fed_epoch(self, progress: Progress) -> Iterator[Batch]:
        import torch  # noqa: PLC0415 -- optional: torch

        if progress.batches == 0:
            return
        while (batch := self._next()) is not None:  # the feed ends DALI's epoch
            images = batch["images"]
            indices: list[int] = batch[SAMPLE_INDEX][:, 0].tolist()
            labels = torch.from_numpy(self._labels_of[indices])
            labels_on = labels.to(images.device, non_blocking=True)
            values = None
            if self._fed_fields is not None:
                values = self._fed_fields.values(batch, indices, images.device)
            progress.yielded += 1
            yield self._assemble(images, labels_on, values)

    def _assemble(self, images: Any, labels: Any, values: dict[str, Any] | None) -> Batch:
        """A batch as the loader yields it (class docstring; `order`: the Dataset's fields)."""
        if values is None:
            return images, labels
        if self.order is None:
            return images, labels, values
        values[self.options.field] = images
        values[self.options.label] = labels
        return tuple(values[f] for f in self.order)

    def state_dict(self) -> dict[str, Any]:
        """Where the current epoch has been read to, as the torch loader's `state_dict`: its
        epoch and the position in its order that every rank has reached after the batches
        handed to the trainer so far (not those DALI prefetched), and what the order reads."""
        return self._reading("state_dict").state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from a `state_dict()` of this loader or of the torch loader, saved with any
        ranks, threads or workers and batch size: set the dataset's epoch to the state's, and
        start the next iteration there. Batches DALI prefetched are dropped. Refused
        (`LoaderStateError`, a ValueError) when the state was saved over another dataset, view,
        seed or shuffle, or when a field is missing, unknown, of another type or out of range
        (`order.state.state_schema`), before any of it is used."""
        self._reading("load_state_dict").load_state_dict(state)
        if self._in_epoch and self._iterator is not None:
            self._rebuild()

    def _reading(self, what: str) -> EpochReading:
        if self._order is None:
            raise ValueError(
                f"{self._source}: {what} needs fastpack's order: make the loader over a Dataset "
                "(make_loader(dataset, loader='dali') or make_dali_loader(dataset)); DALI's "
                "own reader cannot start mid-epoch"
            )
        return self._order

    def _next(self) -> dict[str, torch.Tensor] | None:
        """The next DALI batch of the epoch, or None at its end (`next()`, not `iter()`, which
        would ask DALI for a reset)."""
        try:
            batch: dict[str, torch.Tensor] = next(self._iterator)[0]
        except StopIteration:
            self._in_epoch, self._ended = False, True
            return None
        except RuntimeError as e:
            self.close()  # DALI's pipeline is no longer valid
            raise _read_error(self._source, e) from e
        return batch

    def _epoch(self) -> Iterator[Batch]:
        import torch  # noqa: PLC0415 -- optional: torch

        left, fields = self.samples_per_epoch, self.options.fields
        while (batch := self._next()) is not None:
            take = min(left, self.batch_size)
            left -= take
            images = batch["images"][:take]
            labels = self._labels(batch[LABEL_FIELD][:take].numpy())
            labels_on = torch.from_numpy(labels).to(images.device, non_blocking=True)
            if not fields:
                yield images, labels_on
                continue
            values = FieldBatch(batch, take, self._source, self.options.records).values(
                fields, self.codecs, images.device
            )
            yield self._assemble(images, labels_on, values)

    def _labels(self, batch: Any) -> Any:
        """The int64 (B,) labels of a batch's label output."""
        if self.options.records:
            return record_labels(batch, self._source)
        return parse_labels(batch, self._source)

    def close(self) -> None:
        """Release the pipeline (its threads and buffers)."""
        self._iterator = None


def _shard_files(ds: DatasetFiles) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Paths of every non-empty shard file (tar or TFRecord, as the manifest names them) and
    its `.idx` (a shard whose inputs were all rejected holds no sample), checked to exist, and
    each shard to have its recorded size: DALI's own messages name neither file, or blame the
    `.idx` for a short shard."""
    tars: list[str] = []
    indexes: list[str] = []
    for shard, info in enumerate(ds.manifest.shards):
        if info.samples == 0:
            continue
        for path, kept in ((ds.shard_path(shard), tars), (ds.shard_index_path(shard), indexes)):
            if not path.is_file():
                raise DatasetNotFoundError(f"{path}: shard file listed in the manifest is missing")
            kept.append(str(path))
        size = ds.shard_path(shard).stat().st_size
        if size < info.bytes:
            raise TruncatedFileError(
                f"{ds.shard_path(shard)}: shard has {size} bytes, the manifest records {info.bytes}"
            )
    return tuple(tars), tuple(indexes)


def _label_field(ds: DatasetFiles) -> str:
    """The field DALI reads the labels from: the `cls` members of tars; in record shards the
    schema's label field, whose value is `image/class/label` (or `cls` if there is none, for
    the error that says so)."""
    label = ds.manifest.schema.label_field if ds.records else None
    return label or LABEL_FIELD


def _check_fields(ds: DatasetFiles, field: str) -> None:
    """Refuse a dataset whose samples lack what the loader reads: the image field `field` and
    the label, both required, the image a jpeg in record shards."""
    schema, label = ds.manifest.schema, _label_field(ds)
    missing = [f for f in (field, label) if f not in schema]
    if missing:
        raise MissingFieldError(
            f"{ds.root}: samples hold fields {list(schema.names)}, no {' or '.join(missing)}; the "
            f"DALI reader needs the image field {field!r} and {label!r}"
        )
    if ds.records and schema[field].type != "jpeg":
        raise ValueError(
            f"{ds.root}: field {field!r} is {schema[field].type}; the DALI reader decodes a "
            "jpeg field"
        )
    optional = [f for f in (field, label) if schema[f].optional]
    if optional:
        raise MissingFieldError(
            f"{ds.root}: field {optional[0]!r} is optional; the DALI reader needs an image and "
            "a label in every sample"
        )


def _check_split(root: str, o: PipelineOptions, n: int) -> None:
    """Refuse to split `n` samples over `o`'s ranks where a rank would read nothing."""
    if n < o.num_shards:
        raise ValueError(
            f"{root}: {n} samples cannot be split over {o.num_shards} shards "
            "(every shard needs at least one sample)"
        )
    if o.drop_last and n // o.num_shards < o.batch_size:
        raise ValueError(
            f"{root}: with drop_last, {n} samples over {o.num_shards} shards leave "
            f"{n // o.num_shards} per shard, less than one batch of {o.batch_size}"
        )


def _check_threads(where: str, num_workers: int | None, prefetch_factor: int) -> None:
    """`num_workers` (DALI's threads) and `prefetch_factor` (its queue depth), as DALI takes
    them."""
    if num_workers is not None and num_workers < 1:
        raise ValueError(
            f"{where} runs at least one DALI thread; num_workers={num_workers} (loading in "
            "the main process) has no DALI equivalent"
        )
    if prefetch_factor < 1:
        raise ValueError(
            f"{where}: prefetch_factor (DALI's prefetch_queue_depth) must be at least 1, "
            f"got {prefetch_factor}"
        )


def _feed(dataset: Dataset, o: PipelineOptions) -> SampleFeed:
    """The feed of `o`'s rank: `dataset` in the torch loader's order (`EpochBatchSampler`)."""
    sampler = EpochBatchSampler(
        dataset,
        o.batch_size,
        shuffle=o.shuffle,
        drop_last=o.drop_last,
        seed=o.seed,
        rank=o.shard_id,
        world_size=o.num_shards,
    )
    return SampleFeed(dataset, sampler, o.field, [f.name for f in o.fields if f.kind == "mask"])


@dataclass(frozen=True)
class _Read:
    """What the loader reads: the transform (any object: `dali_transform` checks it), the image
    field, the extra fields (but the label), and the order of a Dataset's fields that batches
    then take (None: `(images, labels[, {field: values}])`)."""

    transform: object
    field: str
    fields: Sequence[str]  # checked by plan_fields
    order: tuple[str, ...] | None


def _dataset_read(
    dataset: Dataset, transform: object, field: str | None, fields: Sequence[str] | None
) -> _Read:
    """`_Read` of `dataset`: its transform, image field and other fields (but the label), each
    given here (not None) taking the place of the Dataset's."""
    if field is None and dataset.field is None:
        raise ValueError(
            f"{dataset.path}: DALI decodes an image, but the dataset has no jpeg field"
        )
    image = field if field is not None else str(dataset.field)
    transform = transform if transform is not None else dataset.transform
    if fields is not None:
        return _Read(transform, image, fields, None)
    if dataset.image_label:
        return _Read(transform, image, (), None)
    label = dataset.manifest.schema.label_field
    extra = tuple(f for f in dataset.fields if f not in (image, label))
    return _Read(transform, image, extra, tuple(dataset.fields) if extra else None)


def _check_seed(dataset: Dataset, crop: DaliTransform, seed: int, where: str) -> None:
    """DALI draws shuffling and crops from one seed: a Dataset's random transform, whose crops
    its `seed` draws on the torch path, needs that seed to be the loader's."""
    if crop.random and dataset.seed != seed:
        raise ValueError(
            f"{where} draws shuffling and crops from one seed, but the Dataset's seed is "
            f"{dataset.seed} and the loader's seed is {seed}: give both the same value"
        )


def make_dali_loader(  # noqa: PLR0913 -- public signature
    dataset: str | os.PathLike[str] | Dataset,
    *,
    batch_size: int,
    transform: Transform | None = None,
    shuffle: bool | None = None,
    num_workers: int | None = None,
    drop_last: bool = False,
    seed: int = 0,
    prefetch_factor: int = 2,
    field: str | None = None,
    fields: Sequence[str] | None = None,
    io: IoChoice | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    dali: DaliOptions | None = None,
) -> DaliLoader:
    """A DALI loader over `dataset`, for this process's rank: DALI's own reader over a path,
    fastpack's order over a `Dataset` (the module docstring says why both). Its options are
    said as for `Dataset` and `make_loader`; what only DALI has is in `dali` (`DaliOptions`:
    device, device_id, mean, std, initial_fill, malloc_mmap_threshold).

    `transform` is the torch path's transform object, which DALI runs with its own operators
    (transforms.py): `RandomResizedCrop` (square `size`, `scale`, `ratio`, `flip_prob`; only the
    window is decoded; DALI draws its own windows) or `CenterCrop` (square `size`, `resize`);
    `fastdct` becomes libjpeg-turbo's fast IDCT, `fastupsample` nvJPEG's fast chroma
    upsampling (`device="gpu"` only: the CPU decoder always upsamples smoothly); `max_upscale`
    bounds a reduced-scale decode, and DALI decodes at full scale, within every bound. Any
    other transform is refused with a ValueError that names it.
    Images are the samples' `field` members (default "jpg"); `fields` names extra fields to
    return beside images and labels: each batch is then `(images, labels, {field: values})`. A
    mask follows its image's crop, flip and resize; a class field comes as int64 labels; any
    other field as each sample's member bytes (zstd frames decompressed), None where an optional
    field is absent; boxes are refused (fields.py). A record dataset (TFRecord shards) is read
    with `fn.readers.tfrecord` (same sharding, shuffling and last-batch policy): images from
    `image/encoded`, labels from `image/class/label`, extra fields from `fastpack/<field>`; its
    optional fields are refused (fields.py). `io` ("auto", "mmap", "pread"), as
    `Dataset(io=)`: how DALI's reader reads the shards ("pread": plain file I/O, no maps; "auto":
    pread on a network or FUSE file system, where a page fault is a round trip).

    Over a `Dataset`, `transform`, `field` and `fields` default to the Dataset's; with the
    Dataset's fields, batches are one value per field in its order, as on the torch path. Its
    random transform's seed must be `seed`. The Dataset reads the members it feeds to DALI with
    its own `io` (giving `io` here is refused), so `initial_fill` does nothing.

    `shuffle` (default: whether the transform is random) over a path reshuffles the shards'
    order every epoch and draws samples at random from a buffer of `initial_fill`; over a
    Dataset it reads each epoch in a keyed permutation of `(seed, epoch)`. `seed` also seeds
    DALI's augmentations. `num_workers` (default: the CPUs this process may use) is DALI's
    thread count, `prefetch_factor` its `prefetch_queue_depth` (batches prepared ahead for the
    whole pipeline). `rank` of `world_size` (default: torch.distributed, else RANK and
    WORLD_SIZE), `drop_last`: the module docstring's sharding and last-batch policy.
    """
    dali = dali or DaliOptions()
    fed = dataset if isinstance(dataset, Dataset) else None
    ds = DatasetFiles(dataset.path if isinstance(dataset, Dataset) else dataset)
    root = str(ds.root)
    where = f"{root}: the DALI loader"
    read = _Read(transform, field or "jpg", fields or (), None)
    if fed is not None:
        if io is not None:
            raise ValueError(f"{where} reads a Dataset with the Dataset's own io, not io={io!r}")
        read = _dataset_read(fed, transform, field, fields)
    crop = dali_transform(read.transform, where)
    if fed is not None and transform is None:
        _check_seed(fed, crop, seed, where)
    if not crop.fancy_upsampling and dali.device == "cpu":
        raise ValueError(
            f"{where} cannot honour fastupsample=True on the CPU ({read.transform!r}): DALI's "
            "CPU decoder always upsamples chroma smoothly (DaliOptions(device='gpu') can)"
        )
    _check_threads(where, num_workers, prefetch_factor)
    _check_fields(ds, read.field)
    rank, world_size = resolve_rank(rank, world_size)
    schema, label = ds.manifest.schema, _label_field(ds)
    records = ds.records and fed is None  # read by DALI's TFRecord reader
    extra = plan_fields(schema, read.fields, read.field, root, label=label, records=records)
    paths, index_paths = _shard_files(ds) if fed is None else ((), ())
    features = [(f, feature_name(schema, f)) for f in (read.field, *(e.name for e in extra))]
    device_id = None
    if dali.device == "gpu":
        device_id = local_device_id() if dali.device_id is None else dali.device_id
    options = PipelineOptions(
        paths=paths,
        index_paths=index_paths,
        batch_size=batch_size,
        transform=crop,
        shuffle=crop.random if shuffle is None else shuffle,
        drop_last=drop_last,
        device=dali.device,
        device_id=device_id,
        num_threads=len(os.sched_getaffinity(0)) if num_workers is None else num_workers,
        seed=seed,
        shard_id=rank,
        num_shards=world_size,
        initial_fill=dali.initial_fill,
        prefetch_queue_depth=prefetch_factor,
        dont_use_mmap=(resolve_io(io or "auto", ds.root) if fed is None else fed.io) == "pread",
        mean=tuple(dali.mean),
        std=tuple(dali.std),
        field=read.field,
        fields=extra,
        label=label,
        features=tuple(features) if records else (),
        fed=fed is not None,
    )
    num_samples = len(ds) if fed is None else len(fed)
    _check_split(root, options, num_samples)
    codecs = {f.name: ds.codec(f.name) for f in extra if schema[f.name].zstd}
    if dali.malloc_mmap_threshold is not None:
        fix_mmap_threshold(dali.malloc_mmap_threshold)
    loader = DaliLoader(
        options,
        num_samples=num_samples,
        source=root,
        codecs=codecs,
        feed=None if fed is None else _feed(fed, options),
    )
    loader.epoch_source = fed
    loader.order = read.order
    return loader
