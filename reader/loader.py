"""`make_loader`: the one switch between the torch DataLoader (simplejpeg in its workers) and
DALI over the same dataset. It is the only module that knows both."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Literal

from .dali import DaliLoader, make_dali_loader
from .image import CenterCrop, RandomResizedCrop
from .map_style import Dataset
from .mix import Mix
from .streaming import StreamingDataset
from .torch_loader import make_torch_loader

if TYPE_CHECKING:
    from .torch_loader.dataloader import FastpackLoader

Decoder = Literal["simplejpeg", "dali"]

# The `make_dali_loader` arguments that `make_loader` sets itself, and from what.
_DALI_DERIVED = {
    "path": "the Dataset",
    "train": "the Dataset's transform",
    "size": "the Dataset's transform",
    "resize_size": "the Dataset's transform (CenterCrop's resize)",
    "scale": "the Dataset's transform",
    "ratio": "the Dataset's transform",
    "flip_prob": "the Dataset's transform",
    "fast_idct": "the Dataset's transform (fastdct)",
    "fancy_upsampling": "the Dataset's transform (fastupsample)",
    "field": "Dataset(field=...)",
    "fields": "Dataset(fields=...)",
    "dont_use_mmap": "Dataset(io=...)",
    "num_threads": "num_workers",
    "prefetch_queue_depth": "prefetch_factor",
}


def make_loader(
    dataset: Dataset | Mix | StreamingDataset,
    *,
    batch_size: int,
    shuffle: bool | None = None,
    num_workers: int | None = None,
    drop_last: bool | None = None,
    seed: int | None = None,
    pin_memory: bool | None = None,
    prefetch_factor: int = 2,
    persistent_workers: bool = True,
    decoder: Decoder = "simplejpeg",
    **kwargs: Any,
) -> FastpackLoader | DaliLoader:
    """A loader yielding `(images (B, H, W, 3) uint8, labels (B,) int64)` batches, or with
    `fields=...` one value per field (see `make_torch_loader`). Either loader's `stats()`
    gives a `LoaderStats` of the interval since its previous call (`fastpack.reader.stats`;
    DALI's counts the trainer's side only).

    `decoder="simplejpeg"` (default): a torch DataLoader whose workers decode whole batches
    into shared memory (see `make_torch_loader` for the options). `dataset` is a `Dataset`
    (`shuffle` default True, `seed` 0, `drop_last` False) or a `StreamingDataset`, whose
    workers each read their stream of the epoch in batches; its order is its own: `shuffle`,
    `seed` and `drop_last` are then the dataset's (left out, or the same values; others are
    refused with a ValueError naming them), and the last batch of each worker may be short.
    A `Mix` is read like a `Dataset`, in its own order (`seed` and `shuffle` default to the
    mix's). The loader resumes: `state_dict()` at any batch boundary, `load_state_dict(state)`
    with any number of ranks, workers and any batch size (`FastpackLoader`).

    `decoder="dali"` decodes a `Dataset`'s images with DALI's operators instead (see
    `make_dali_loader`), in the order of the torch path: the same `EpochBatchSampler` (seed,
    shuffle, drop_last, ranks) feeds DALI the samples (`fn.external_source`), so both read the
    same batches, the Dataset's view included, and follow `set_epoch` alike. The `DaliLoader`'s
    `state_dict()` and `load_state_dict()` take the torch loader's state: either resumes the
    other, with any ranks, threads/workers and batch size. A `StreamingDataset` is refused
    (DALI reads local shards: give it a `Dataset` of the same path). Every option is then
    honoured or refused with a ValueError naming it:

    - the transform: RandomResizedCrop (`size` square, `scale`, `ratio`, `flip_prob`) gives the
      training pipeline, CenterCrop (`size` square, `resize`) the evaluation one; `fastdct`
      becomes DALI's fast IDCT, `fastupsample` nvJPEG's chroma upsampling with `device="gpu"`
      (refused on the CPU, whose DALI decoder always upsamples chroma smoothly).
      `max_upscale` bounds how much a reduced-scale (DCT) decode may be enlarged; DALI
      decodes the crop at full scale, which is within every bound, so any value is accepted.
    - `shuffle` (default True), `drop_last` (default False) and `seed` (default 0) are the
      sampler's, as on the torch path; `seed` also seeds DALI's augmentations, so with a random
      transform the Dataset's `seed` (the crops' seed on the torch path) must equal it. DALI
      draws its crops itself: the same samples as the torch path, other crops.
    - the Dataset's `field` is the image member DALI reads; its other `fields` (but the label)
      are DALI's extra `fields`; batches are then one value per field in the Dataset's order,
      as on the torch path, but DALI gives masks as arrays and every other extra field as its
      member's bytes, one uint8 tensor per sample, decompressed (see `make_dali_loader`);
      boxes and optional masks are refused; other optional fields come None where absent,
      from record shards too.
      The Dataset reads the members it feeds to DALI with its own `io`.
    - `num_workers` is DALI's thread count (at least 1), `prefetch_factor` its
      `prefetch_queue_depth` (batches prepared ahead, for the whole pipeline).
    - `pin_memory=True` is refused: DALI's CPU batches are not pinned and its GPU batches are
      already on the GPU. `persistent_workers=False` is refused: DALI's threads live as long as
      the loader.
    - other keyword arguments go to `make_dali_loader` (`device`, `shard_id` and `num_shards`:
      the sampler's rank and world size, `mean`, `std`, ...); one it does not take (a torch
      DataLoader option, say), or one that `make_loader` sets from the above, is refused.
    """
    if decoder == "dali":
        if isinstance(dataset, Mix):
            raise ValueError(
                f"{dataset.path}: decoder='dali' reads one dataset's shards; a Mix is read by "
                "the torch loader (decoder='simplejpeg')"
            )
        if isinstance(dataset, StreamingDataset):
            raise ValueError(
                f"{dataset.path}: decoder='dali' reads a local dataset's shards itself "
                "(make_dali_loader) and cannot read a StreamingDataset; give make_loader "
                "Dataset(path) instead, or use decoder='simplejpeg'"
            )
        seed = 0 if seed is None else seed
        dali_options = _dali_options(
            dataset,
            num_workers=num_workers,
            seed=seed,
            pin_memory=pin_memory,
            prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers,
            extra=kwargs,
        )
        loader = make_dali_loader(
            dataset,
            batch_size=batch_size,
            shuffle=shuffle is not False,
            drop_last=bool(drop_last),
            seed=seed,
            **dali_options,
        )
        loader.epoch_source = dataset
        if "fields" in dali_options:
            loader.order = tuple(dataset.fields)  # the torch path's shape: one value per field
        return loader
    if decoder != "simplejpeg":
        raise ValueError(f"decoder must be 'simplejpeg' or 'dali', got {decoder!r}")
    return make_torch_loader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        drop_last=drop_last,
        seed=seed,
        pin_memory=pin_memory,
        prefetch_factor=prefetch_factor,
        persistent_workers=persistent_workers,
        **kwargs,
    )


def _dali_options(
    dataset: Dataset,
    *,
    num_workers: int | None,
    seed: int,
    pin_memory: bool | None,
    prefetch_factor: int,
    persistent_workers: bool,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """The `make_dali_loader` arguments (beyond path, batch size, shuffle, drop_last and seed)
    that do what `make_loader`'s arguments and `dataset` ask for; a ValueError for what DALI
    cannot do (see `make_loader`)."""
    where = f"{dataset.path}: decoder='dali'"
    _check_extra(where, extra)
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
    if pin_memory:
        raise ValueError(
            f"{where} cannot honour pin_memory=True: DALI's CPU batches are not in pinned "
            "memory (device='gpu' puts them on the GPU instead)"
        )
    if not persistent_workers:
        raise ValueError(
            f"{where} cannot honour persistent_workers=False: DALI's threads live as long as "
            "the loader"
        )
    options = _dali_transform_options(dataset, seed, gpu=extra.get("device") == "gpu")
    options.update(_dali_field_options(dataset, where))
    return {
        **options,
        "dont_use_mmap": dataset.io == "pread",
        "num_threads": num_workers,
        "prefetch_queue_depth": prefetch_factor,
        **extra,
    }


def _dali_field_options(dataset: Dataset, where: str) -> dict[str, Any]:
    """The image field DALI decodes, and the other fields of `dataset` as DALI's extra
    `fields` (DALI returns the images and the labels in any case)."""
    if dataset.field is None:
        raise ValueError(f"{where} decodes an image, but the dataset has no jpeg field")
    options: dict[str, Any] = {"field": dataset.field}
    if dataset.image_label:
        return options
    label = dataset.manifest.schema.label_field
    extra = tuple(f for f in dataset.fields if f not in (dataset.field, label))
    if extra:
        options["fields"] = extra
    return options


def _check_extra(where: str, extra: dict[str, Any]) -> None:
    """Refuse keyword arguments that `make_dali_loader` does not take, or that `make_loader`
    sets itself."""
    derived = sorted(set(extra) & set(_DALI_DERIVED))
    if derived:
        sources = ", ".join(f"{name} from {_DALI_DERIVED[name]}" for name in derived)
        raise ValueError(f"{where} sets {sources}; do not pass {', '.join(derived)}")
    taken = set(inspect.signature(make_dali_loader).parameters)
    unknown = sorted(set(extra) - taken)
    if unknown:
        allowed = sorted(
            taken - set(_DALI_DERIVED) - set(inspect.signature(make_loader).parameters)
        )
        raise ValueError(
            f"{where} cannot honour {', '.join(unknown)}: not options of the DALI loader "
            f"(torch DataLoader options do not apply); it takes {', '.join(allowed)}"
        )


def _dali_transform_options(dataset: Dataset, seed: int, *, gpu: bool) -> dict[str, Any]:
    """The `make_dali_loader` arguments that do what `dataset.transform` does (`gpu`: for
    `device="gpu"`)."""
    transform = dataset.transform
    where = f"{dataset.path}: decoder='dali'"
    if isinstance(transform, RandomResizedCrop):
        if dataset.seed != seed:
            raise ValueError(
                f"{where} draws shuffling and crops from one seed, but the Dataset's seed is "
                f"{dataset.seed} and make_loader's seed is {seed}: give both the same value"
            )
        options: dict[str, Any] = {"train": True, "scale": transform.scale}
        options.update(ratio=transform.ratio, flip_prob=transform.flip_prob)
    elif isinstance(transform, CenterCrop):  # not random: the Dataset's seed is not used
        options = {"train": False, "resize_size": transform.resize}
    else:
        raise ValueError(
            f"{where} needs a RandomResizedCrop or CenterCrop transform, got {transform!r}"
        )
    shape = transform.output_shape
    if shape[0] != shape[1]:
        raise ValueError(f"{where} makes square crops (size), got {shape}")
    decode = transform.options
    if decode.fastupsample and not gpu:
        raise ValueError(
            f"{where} cannot honour fastupsample=True on the CPU: DALI's CPU decoder always "
            "upsamples chroma smoothly (device='gpu' can)"
        )
    return {
        "size": shape[0],
        "fast_idct": decode.fastdct,
        "fancy_upsampling": not decode.fastupsample,
        **options,
    }
