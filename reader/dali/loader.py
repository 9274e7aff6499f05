"""NVIDIA DALI as the reader: a dataset's tar shards and `.idx` files through
`fn.readers.webdataset` (record shards, TFRecord files of Examples, through
`fn.readers.tfrecord`: images from `image/encoded`, labels from `image/class/label`, the other
fields from `fastpack/<field>`), decoded on the CPU (`device="cpu"`) or on the GPU
(`device="gpu"`).

    loader = make_dali_loader("data/train", batch_size=256, train=True, seed=0)
    for epoch in range(epochs):
        for images, labels in loader:  # uint8 (B, 224, 224, 3) and int64 (B,), on the CPU
            ...

Extra fields of a version-2 dataset come as a third element, a dict by field name (fields.py
says how each is returned; a mask is cropped and flipped with its image):

    loader = make_dali_loader("data/seg", batch_size=64, train=True, fields=("seg.png", "txt"))
    for images, labels, fields in loader:
        masks = fields["seg.png"]  # uint8 (B, 224, 224, C), aligned with `images`
        captions = [bytes(t.numpy()).decode() for t in fields["txt"]]

Sharding and epoch length. Rank `r` of `n` reads DALI shard `r` of `n` (samples are split over
all shard files concatenated); `r` and `n` come from the arguments, else from torch.distributed,
else from RANK and WORLD_SIZE. Every rank yields the same number of batches per epoch, so DDP never
waits on a rank that ran out:

- `drop_last=False`: each rank yields `ceil(N / n)` samples per epoch, in
  `ceil(ceil(N / n) / batch_size)` batches whose last one may be partial. When `n` does not
  divide `N`, a rank whose share is one sample short repeats its last sample once (DALI's
  `pad_last_batch`). Across ranks every sample is seen exactly once per epoch, plus those repeats.
- `drop_last=True`: each rank yields `floor(floor(N / n) / batch_size)` full batches; the rest
  of its share is skipped that epoch.

Host memory. DALI's decoded images come in every size; glibc's malloc, which raises its mmap
threshold as it goes, then keeps them in fragmenting heap arenas and resident memory drifts by tens
of MiB between epochs. `make_dali_loader` therefore fixes the threshold (`malloc_mmap_threshold`,
default 256 KiB, process-wide; `None` or a `MALLOC_MMAP_THRESHOLD_` environment variable leaves
malloc alone). benchmarks/DALI.md has the resident memory over 25 epochs with and without it.

The test suite runs the CPU path (it needs no GPU). The GPU path (`device="gpu"`: nvJPEG decode
with `device="mixed"`, resize and `crop_mirror_normalize` on the GPU, float32 NCHW out) was run
and checked against the CPU path on an H100: labels, shapes and pixels (benchmarks/GPU.md).

DALI and torch are imported when a loader is made, not when this module is imported.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from fastpack.formats import (
    DatasetFiles,
    DatasetNotFoundError,
    FieldCodec,
    TruncatedFileError,
    feature_name,
)

from ..closing import ClosesOnExit
from ..errors import DaliReadError, MissingDependencyError, MissingFieldError
from ..image.normalize import IMAGENET_MEAN, IMAGENET_STD
from ..ranks import local_device_id, resolve_rank
from ..shard_files import resolve_io
from .fields import FieldBatch, output_names, plan_fields
from .labels import parse_labels, record_labels
from .malloc import fix_mmap_threshold
from .options import LABEL_FIELD, READER_NAME, Device, PipelineOptions

if TYPE_CHECKING:
    import torch

# What a loader yields: (images, labels), or (images, labels, fields) when it reads fields.
Batch = tuple[Any, ...]


def _dali_iterator(options: PipelineOptions, drop_last: bool, source: str) -> Any:
    """A `DALIGenericIterator` over a new pipeline; it builds the pipeline and reads one batch
    (DALI's errors there, on damaged files of dataset `source`, raise `DaliReadError`)."""
    try:
        from nvidia.dali.plugin.base_iterator import LastBatchPolicy  # noqa: PLC0415 - DALI is optional
        from nvidia.dali.plugin.pytorch import DALIGenericIterator  # noqa: PLC0415

        from .pipeline import build_pipeline  # noqa: PLC0415 - imports DALI
    except ImportError as e:
        raise MissingDependencyError(
            f"the DALI reader needs NVIDIA DALI and torch (pip install 'fastpack[dali,torch]'): {e}"
        ) from e
    pipeline = build_pipeline(options)
    try:
        return DALIGenericIterator(
            [pipeline],
            output_names(options.fields, options.records),
            reader_name=READER_NAME,
            last_batch_policy=LastBatchPolicy.DROP if drop_last else LastBatchPolicy.FILL,
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


class EpochSource(Protocol):
    """What the loader checks epochs against: a `Dataset`, whose `set_epoch` sets `epoch`."""

    @property
    def epoch(self) -> int: ...


def _samples_per_epoch(num_samples: int, num_shards: int, batch_size: int, drop_last: bool) -> int:
    """What one rank yields per epoch (the module docstring's last-batch policy)."""
    if drop_last:
        return num_samples // num_shards // batch_size * batch_size
    return -(-num_samples // num_shards)


class DaliLoader(ClosesOnExit):
    """One rank's `(images, labels)` batches, epoch after epoch: `for images, labels in loader`;
    with extra fields `(images, labels, fields)` (`options.fields`).

    `images`: uint8 (B, size, size, 3) CPU tensor with `device="cpu"`; float32 (B, 3, size, size)
    normalized with `mean`/`std` on the GPU with `device="gpu"`. `labels`: int64 (B,) parsed from
    the samples' `cls` members (record shards: `image/class/label`), on the images' device.
    `fields`: each extra field's values by name (fields.py); `codecs` decompress its zstd
    fields. `len(loader)` is the number of batches per epoch, the same on every rank. Each
    `iter()` starts a new epoch; DALI cannot rewind, so an epoch left unfinished is first read
    to its end. DALI counts epochs itself: when `epoch_source` is set (`make_loader` sets the
    `Dataset`), an epoch it names other than 0 must be the one DALI starts, else ValueError.
    DALI's own errors on damaged files are raised as `DaliReadError`, after which the loader is
    closed. Made by `make_dali_loader`.
    """

    def __init__(
        self,
        options: PipelineOptions,
        *,
        num_samples: int,
        drop_last: bool,
        source: str,
        codecs: Mapping[str, FieldCodec] | None = None,
    ) -> None:
        self.options = options
        self.codecs = dict(codecs or {})
        self.num_samples = num_samples
        self.drop_last = drop_last
        self.samples_per_epoch = _samples_per_epoch(
            num_samples, options.num_shards, options.batch_size, drop_last
        )
        self.epoch_source: EpochSource | None = None
        # `make_loader` sets the Dataset's fields: batches then come as one value per field in
        # this order (the image field's images, the label field's labels, the others' values)
        self.order: tuple[str, ...] | None = None
        self._source = source
        self._iterator: Any = _dali_iterator(options, drop_last, source)
        self._in_epoch = False
        self._epochs_started = 0

    @property
    def batch_size(self) -> int:
        return self.options.batch_size

    @property
    def shard_id(self) -> int:
        return self.options.shard_id

    @property
    def num_shards(self) -> int:
        return self.options.num_shards

    def __len__(self) -> int:
        return math.ceil(self.samples_per_epoch / self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        if self._iterator is None:
            raise ValueError(f"{self._source}: this DALI loader is closed")
        if self._in_epoch:
            while self._next() is not None:
                pass
        self._check_epoch(self._epochs_started)
        self._epochs_started += 1
        self._in_epoch = True
        return self._epoch()

    def _check_epoch(self, starting: int) -> None:
        wanted = 0 if self.epoch_source is None else self.epoch_source.epoch
        if wanted not in (0, starting):
            raise ValueError(
                f"{self._source}: the dataset is at epoch {wanted} (set_epoch) but DALI is "
                f"starting its epoch {starting}: DALI counts epochs itself, one per pass over "
                "the loader from 0, and cannot start at another"
            )

    def _next(self) -> dict[str, torch.Tensor] | None:
        """The next DALI batch of the epoch, or None at its end (`next()`, not `iter()`, which
        would ask DALI for a reset)."""
        try:
            batch: dict[str, torch.Tensor] = next(self._iterator)[0]
        except StopIteration:
            self._in_epoch = False
            return None
        except RuntimeError as e:
            self.close()  # DALI's pipeline is no longer valid
            raise _read_error(self._source, e) from e
        return batch

    def _epoch(self) -> Iterator[Batch]:
        import torch  # noqa: PLC0415 - imported with DALI, when a loader is made

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
            if self.order is None:
                yield images, labels_on, values
            else:
                values[self.options.field] = images
                values[self.options.label] = labels_on
                yield tuple(values[f] for f in self.order)

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


def _check_dataset(
    ds: DatasetFiles, field: str, num_shards: int, batch_size: int, drop_last: bool
) -> None:
    n, schema, label = len(ds), ds.manifest.schema, _label_field(ds)
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
    if n < num_shards:
        raise ValueError(
            f"{ds.root}: {n} samples cannot be split over {num_shards} shards "
            "(every shard needs at least one sample)"
        )
    if drop_last and n // num_shards < batch_size:
        raise ValueError(
            f"{ds.root}: with drop_last, {n} samples over {num_shards} shards leave "
            f"{n // num_shards} per shard, less than one batch of {batch_size}"
        )


def make_dali_loader(
    path: str | os.PathLike[str],
    *,
    batch_size: int,
    train: bool,
    size: int = 224,
    device: Device = "cpu",
    shuffle: bool | None = None,
    drop_last: bool = False,
    num_threads: int | None = None,
    seed: int = 0,
    shard_id: int | None = None,
    num_shards: int | None = None,
    device_id: int | None = None,
    resize_size: int | None = None,
    scale: tuple[float, float] = (0.08, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
    initial_fill: int = 1024,
    prefetch_queue_depth: int = 2,
    dont_use_mmap: bool | None = None,
    malloc_mmap_threshold: int | None = 256 * 1024,
    flip_prob: float = 0.5,
    field: str = "jpg",
    fast_idct: bool = False,
    fancy_upsampling: bool = True,
    fields: Sequence[str] = (),
) -> DaliLoader:
    """A DALI loader over the dataset at `path`, for this process's rank.

    `train=True`: random-resized-crop (`scale`, `ratio`; only the crop's region is decoded) to
    `size` x `size` and a horizontal flip with probability `flip_prob`. `train=False`: shorter
    side resized to `resize_size` (default `round(size / 0.875)`), then the centre `size` x `size`.
    Images are the samples' `field` members. `fast_idct` uses libjpeg-turbo's faster, less
    accurate IDCT (the CPU decoder, and the GPU path's CPU fallback). `fancy_upsampling=False`
    lets nvJPEG upsample chroma the fast way (`device="gpu"` only: the CPU decoder always
    upsamples smoothly).
    `shuffle` (default: `train`) reshuffles the tars' order every epoch and draws samples at random
    from a buffer of `initial_fill`. `num_threads` (default: the CPUs this process may use) is
    DALI's thread count; `seed` fixes shuffling and augmentation. `device="gpu"` decodes on GPU
    `device_id` (default: LOCAL_RANK) and returns float32 NCHW normalized by `mean` and `std`
    (0..1 scale, as `to_float`); benchmarks/GPU.md checks it against the CPU path.
    `dont_use_mmap` reads the tars with plain file I/O instead of maps; None (default): on a
    network or FUSE file system (where a page fault is a round trip), as `Dataset(io="auto")`.
    `malloc_mmap_threshold` keeps host memory flat (see the module docstring, like sharding and
    the last-batch policy).
    `fields` names extra fields of the samples to return beside images and labels: each batch is
    then `(images, labels, {field: values})`. A mask follows its image's crop, flip and resize;
    a class field comes as int64 labels; any other field as each sample's member bytes (zstd
    frames decompressed), None where an optional field is absent; boxes are refused (fields.py).
    A record dataset (TFRecord shards) is read with `fn.readers.tfrecord` (same sharding,
    shuffling and last-batch policy): images from `image/encoded`, labels from
    `image/class/label`, extra fields from `fastpack/<field>`; its optional fields are refused
    (fields.py).
    """
    resize_size = resize_size if resize_size is not None else round(size / 0.875)
    num_threads = num_threads if num_threads is not None else len(os.sched_getaffinity(0))
    shard, shards = resolve_rank(shard_id, num_shards)
    gpu = (device_id if device_id is not None else local_device_id()) if device == "gpu" else None
    ds = DatasetFiles(path)
    _check_dataset(ds, field, shards, batch_size, drop_last)
    schema, label = ds.manifest.schema, _label_field(ds)
    extra = plan_fields(schema, fields, field, str(ds.root), label=label, records=ds.records)
    codecs = {f.name: ds.codec(f.name) for f in extra if schema[f.name].zstd}
    paths, index_paths = _shard_files(ds)
    features = [(f, feature_name(schema, f)) for f in (field, *(e.name for e in extra))]
    options = PipelineOptions(
        paths=paths,
        index_paths=index_paths,
        batch_size=batch_size,
        train=train,
        shuffle=train if shuffle is None else shuffle,
        size=size,
        resize_size=resize_size,
        device=device,
        device_id=gpu,
        num_threads=num_threads,
        seed=seed,
        shard_id=shard,
        num_shards=shards,
        initial_fill=initial_fill,
        prefetch_queue_depth=prefetch_queue_depth,
        dont_use_mmap=(
            resolve_io("auto", ds.root) == "pread" if dont_use_mmap is None else dont_use_mmap
        ),
        scale=scale,
        ratio=ratio,
        mean=tuple(mean),
        std=tuple(std),
        flip_prob=flip_prob,
        field=field,
        fast_idct=fast_idct,
        fancy_upsampling=fancy_upsampling,
        fields=extra,
        label=label,
        features=tuple(features) if ds.records else (),
    )
    if malloc_mmap_threshold is not None:
        fix_mmap_threshold(malloc_mmap_threshold)
    return DaliLoader(
        options, num_samples=len(ds), drop_last=drop_last, source=str(ds.root), codecs=codecs
    )
