"""`make_dali_loader`: NVIDIA DALI as the reader: a dataset's tar shards and `.idx` files through
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

Two sources of samples (`_Source`), the same graph after them (decode, resize, crop, flip,
normalize):

- a path: DALI's own reader (`fn.readers.webdataset`, `fn.readers.tfrecord`) chooses the order
  (its shuffle: shard files reshuffled each epoch, samples drawn from a buffer of
  `initial_fill`). It made the figures of benchmarks/gpu/GPU.md, but cannot start mid-epoch,
  follow `set_epoch` or read a view. A path to a dataset over adopted shards (`fastpack index`)
  is read as a `Dataset` of that path instead: their members are named as their writer named
  them, which DALI's readers would not match to the index.
- a `Dataset` (what `make_loader(dataset, loader="dali")` passes): fastpack's order, fed through
  `fn.external_source` (feed.py) by the torch loader's `EpochBatchSampler` with the same seed,
  shuffle, drop_last and ranks, so DALI reads the torch loader's batches sample for sample,
  honours the Dataset's view (a class-balanced one too), follows `set_epoch`, and resumes from
  either loader's `state_dict()` with any ranks, threads and batch size. The feed's work per
  sample is small beside DALI's CPU decode of the image: the fed path runs at 0.96x the
  reader's images/s on the CPU, with 2% more CPU per image (benchmarks/gpu/DALI.md). A path
  keeps DALI's reader because the GPU figures were measured with it, where the feed's Python
  work per sample has not been measured yet.

    loader = make_loader(Dataset("data/train", transform=RandomResizedCrop(224)),
                         batch_size=256, loader="dali")
    loader.load_state_dict(saved)  # from this loader or the torch one
    for images, labels in loader: ...
    saved = loader.state_dict()

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

The loader is `DaliLoader` (loader.py, which says how ranks share an epoch); its pipeline is
pipeline.py's. DALI and torch are imported when a loader is made, not when this module is
imported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from fastpack.formats import DatasetFiles
from fastpack.formats.tfrecord import feature_name

from ..image.transforms import Transform
from ..map_style.dataset import Dataset
from ..order.sampler import EpochBatchSampler
from ..ranks import local_device_id, resolve_rank
from ..shard_files import IoChoice, resolve_dataset_io
from ..versions import check_version
from .checks import check_fields, check_seed, check_split, check_threads, label_field, shard_files
from .feed import SampleFeed
from .fields import plan_fields
from .loader import DaliLoader
from .malloc import fix_mmap_threshold
from .options import DaliOptions, FieldOutput, PipelineOptions
from .transforms import DaliTransform, dali_transform


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
    version: int | None = None,
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
    WORLD_SIZE), `drop_last`: the sharding and last-batch policy of loader.py's docstring.
    `version` reads that version of a dataset grown by `fastpack append` over a path (default:
    the latest); a Dataset reads its own (`Dataset(path, version=...)`).
    """
    dali = dali or DaliOptions()
    source = _source(dataset, io, version)
    if source.fed is None and source.files.manifest.adopted:
        # adopted shards name their members as their writer did (any key, `.jpeg`, a class
        # name in `.cls`): DALI's own readers would take them otherwise than the index does
        fed = Dataset(source.root, seed=seed, io=io or "auto", version=version)
        source, io = _Source(source.files, fed), None
    read = _read(source, transform, field, fields)
    crop = _crop(source, read, seed, dali, given=transform is not None)
    check_threads(source.where, num_workers, prefetch_factor)
    members = _members(source, read, io)
    rank, world_size = resolve_rank(rank, world_size)
    batching = _Batching(
        batch_size=batch_size,
        shuffle=crop.random if shuffle is None else shuffle,
        drop_last=drop_last,
        seed=seed,
        rank=rank,
        world_size=world_size,
        threads=len(os.sched_getaffinity(0)) if num_workers is None else num_workers,
        prefetch=prefetch_factor,
    )
    options = _pipeline_options(members, crop, batching, dali)
    check_split(source.root, options, len(source))
    return _loader(source, read, options, dali)


@dataclass(frozen=True)
class _Source:
    """What the loader reads: a dataset's files, through DALI's own reader (`fed` None) or as
    the samples of a `Dataset` fed in fastpack's order (`fed`)."""

    files: DatasetFiles
    fed: Dataset | None

    @property
    def root(self) -> str:
        return str(self.files.root)

    @property
    def where(self) -> str:
        """How errors name the loader."""
        return f"{self.root}: the DALI loader"

    def __len__(self) -> int:
        return len(self.files) if self.fed is None else len(self.fed)


def _source(
    dataset: str | os.PathLike[str] | Dataset, io: IoChoice | None, version: int | None
) -> _Source:
    """`dataset` opened (a path: at `version`, None the latest; a Dataset: at the version it
    reads, which a `version` given must name); a Dataset reads its members with its own `io`,
    so `io` is refused."""
    if not isinstance(dataset, Dataset):
        return _Source(DatasetFiles(dataset, version=check_version(version, str(dataset))), None)
    source = _Source(DatasetFiles(dataset.path, dataset.manifest), dataset)
    if io is not None:
        raise ValueError(f"{source.where} reads a Dataset with the Dataset's own io, not io={io!r}")
    if version is not None and version != dataset.version:
        raise ValueError(
            f"{source.where}: version={version}, but the Dataset reads version "
            f"{dataset.version}: open it with Dataset(path, version={version})"
        )
    return source


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


def _read(
    source: _Source, transform: object, field: str | None, fields: Sequence[str] | None
) -> _Read:
    """What to read: as given over a path (the image field "jpg" by default), else the
    Dataset's (`_dataset_read`)."""
    if source.fed is None:
        return _Read(transform, field or "jpg", fields or (), None)
    return _dataset_read(source.fed, transform, field, fields)


def _crop(
    source: _Source, read: _Read, seed: int, dali: DaliOptions, *, given: bool
) -> DaliTransform:
    """The transform as DALI runs it (transforms.py), checked against the loader: a Dataset's
    own random transform needs the loader's seed (`check_seed`; not one `given` here), and the
    CPU decoder cannot upsample chroma the fast way."""
    crop = dali_transform(read.transform, source.where)
    if source.fed is not None and not given:
        check_seed(source.fed, crop, seed, source.where)
    if not crop.fancy_upsampling and dali.device == "cpu":
        raise ValueError(
            f"{source.where} cannot honour fastupsample=True on the CPU ({read.transform!r}): "
            "DALI's CPU decoder always upsamples chroma smoothly (DaliOptions(device='gpu') can)"
        )
    return crop


@dataclass(frozen=True)
class _Members:
    """The members the pipeline reads of each sample, and from where: the shard files and
    their indexes (none when `fed`: the feed gives the members), the image field, the extra
    fields as DALI returns them, the label field, each field's Example feature in record
    shards, and whether to read without maps."""

    paths: tuple[str, ...]
    index_paths: tuple[str, ...]
    field: str
    fields: tuple[FieldOutput, ...]
    label: str
    features: tuple[tuple[str, str], ...]
    dont_use_mmap: bool
    fed: bool


def _members(source: _Source, read: _Read, io: IoChoice | None) -> _Members:
    """`read`'s members of `source`, checked against its schema (checks.py, fields.py)."""
    ds, fed = source.files, source.fed
    check_fields(ds, read.field)
    schema, label = ds.manifest.schema, label_field(ds)
    records = ds.records and fed is None  # read by DALI's TFRecord reader
    extra = plan_fields(schema, read.fields, read.field, source.root, label=label, records=records)
    paths, index_paths = shard_files(ds) if fed is None else ((), ())
    features = [(f, feature_name(schema, f)) for f in (read.field, *(e.name for e in extra))]
    method = resolve_dataset_io(io or "auto", ds) if fed is None else fed.io
    return _Members(
        paths=paths,
        index_paths=index_paths,
        field=read.field,
        fields=extra,
        label=label,
        features=tuple(features) if records else (),
        dont_use_mmap=method == "pread",
        fed=fed is not None,
    )


@dataclass(frozen=True, kw_only=True)
class _Batching:
    """How one rank's pipeline batches, shuffles and runs: `make_dali_loader`'s options,
    resolved (the rank, the thread count)."""

    batch_size: int
    shuffle: bool
    drop_last: bool
    seed: int
    rank: int
    world_size: int
    threads: int
    prefetch: int


def _pipeline_options(
    members: _Members, crop: DaliTransform, b: _Batching, dali: DaliOptions
) -> PipelineOptions:
    """One rank's pipeline (options.py checks it), on GPU `device_id` (default: LOCAL_RANK)
    with `device="gpu"`."""
    device_id = None
    if dali.device == "gpu":
        device_id = local_device_id() if dali.device_id is None else dali.device_id
    return PipelineOptions(
        paths=members.paths,
        index_paths=members.index_paths,
        batch_size=b.batch_size,
        transform=crop,
        shuffle=b.shuffle,
        drop_last=b.drop_last,
        device=dali.device,
        device_id=device_id,
        num_threads=b.threads,
        seed=b.seed,
        shard_id=b.rank,
        num_shards=b.world_size,
        initial_fill=dali.initial_fill,
        prefetch_queue_depth=b.prefetch,
        dont_use_mmap=members.dont_use_mmap,
        mean=tuple(dali.mean),
        std=tuple(dali.std),
        field=members.field,
        fields=members.fields,
        label=members.label,
        features=members.features,
        fed=members.fed,
    )


def _loader(source: _Source, read: _Read, o: PipelineOptions, dali: DaliOptions) -> DaliLoader:
    """The loader of pipeline `o` over `source` (a Dataset's through its feed), with the codecs
    of its zstd fields, after malloc's mmap threshold is fixed (the module docstring's host
    memory)."""
    ds, fed = source.files, source.fed
    codecs = {f.name: ds.codec(f.name) for f in o.fields if ds.manifest.schema[f.name].zstd}
    if dali.malloc_mmap_threshold is not None:
        fix_mmap_threshold(dali.malloc_mmap_threshold)
    loader = DaliLoader(
        o,
        num_samples=len(source),
        source=source.root,
        codecs=codecs,
        feed=None if fed is None else _feed(fed, o),
    )
    loader.epoch_source = fed
    loader.order = read.order
    return loader


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
