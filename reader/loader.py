"""`make_loader`: the one switch between fastpack's loaders over the same dataset, each chosen
by a name that says what it is: `loader="torch"`, a torch DataLoader whose workers decode with
simplejpeg, `loader="dali"`, NVIDIA DALI's operators, or `loader="nvimgcodec"`, nvImageCodec on
the trainer's GPU. Each name is one entry of `_LOADERS`, a
function of the dataset and `make_loader`'s options (`LoaderOptions`); every loader reads
fastpack's order from reader/order/. This is the only module that knows them all."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .dali import DaliLoader, DaliOptions, make_dali_loader
from .map_style import Dataset
from .mix import Mix
from .nvimgcodec_loader import NvImageCodecLoader, make_nvimgcodec_loader
from .streaming import StreamingDataset
from .torch_loader import make_torch_loader

if TYPE_CHECKING:
    from .torch_loader.dataloader import FastpackLoader

LoaderName = Literal["torch", "dali", "nvimgcodec"]
Readable = Dataset | Mix | StreamingDataset
# `decoder=`, the keyword `loader=` replaces: the loader each of its names chose
_DECODERS: dict[str, LoaderName] = {"simplejpeg": "torch", "dali": "dali"}


def make_loader(  # noqa: PLR0913 -- public signature
    dataset: Readable,
    *,
    batch_size: int,
    shuffle: bool | None = None,
    num_workers: int | None = None,
    drop_last: bool | None = None,
    seed: int | None = None,
    pin_memory: bool | None = None,
    prefetch_factor: int = 2,
    persistent_workers: bool = True,
    loader: LoaderName = "torch",
    decoder: str | None = None,
    version: int | None = None,
    **kwargs: Any,
) -> FastpackLoader | DaliLoader | NvImageCodecLoader:
    """A loader yielding `(images (B, H, W, 3) uint8, labels (B,) int64)` batches, or with
    `fields=...` one value per field (see `make_torch_loader`). Either loader's `stats()`
    gives a `LoaderStats` of the interval since its previous call (`fastpack.reader.stats`;
    DALI's counts the trainer's side only).

    `loader="torch"` (default): a torch DataLoader whose workers decode whole batches
    into shared memory (see `make_torch_loader` for the options). `dataset` is a `Dataset`
    (`shuffle` default True, `seed` 0, `drop_last` False) or a `StreamingDataset`, whose
    workers each read their stream of the epoch in batches; its order is its own: `shuffle`,
    `seed` and `drop_last` are then the dataset's (left out, or the same values; others are
    refused with a ValueError naming them), and the last batch of each worker may be short.
    A `Mix` is read like a `Dataset`, in its own order (`seed` and `shuffle` default to the
    mix's). The loader resumes: `state_dict()` at any batch boundary, `load_state_dict(state)`
    with any number of ranks, workers and any batch size (`FastpackLoader`).

    `loader="dali"` decodes a `Dataset`'s images with DALI's operators instead
    (`make_dali_loader(dataset, ...)` with these options), in the order of the torch path: the
    same `EpochBatchSampler` (seed, shuffle, drop_last, ranks) feeds DALI the samples
    (`fn.external_source`), so both read the same batches, the Dataset's view included, and
    follow `set_epoch` alike. The `DaliLoader`'s `state_dict()` and `load_state_dict()` take
    the torch loader's state: either resumes the other, with any ranks, threads/workers and
    batch size. A `StreamingDataset` or a `Mix` is refused. The options mean what they mean
    on the torch path, or are refused with a ValueError naming them:

    - the Dataset's transform is run by DALI's operators (`make_dali_loader` says which
      transforms and settings; another is refused, naming it), its `field` and `fields` are
      read as on the torch path (masks as arrays, every other extra field as its member's
      bytes; boxes and optional masks refused), and its `seed` must be the loader's when the
      transform is random (DALI has one seed for order and crops, and draws its own crops).
    - `shuffle` (default True), `drop_last` (default False) and `seed` (default 0) are the
      sampler's; `num_workers` is DALI's thread count (at least 1), `prefetch_factor` its
      `prefetch_queue_depth`.
    - `pin_memory=True` is refused: DALI's CPU batches are not pinned and its GPU batches are
      already on the GPU. `persistent_workers=False` is refused: DALI's threads live as long as
      the loader.
    - other keyword arguments are DALI's own settings, the fields of `DaliOptions` (`device`,
      `device_id`, `mean`, `std`, `initial_fill`, `malloc_mmap_threshold`); any other (a torch
      DataLoader option, say) is refused.

    `loader="nvimgcodec"` reads a `Dataset` as `loader="torch"` does, but its workers only
    read the bytes and draw the crops: the trainer decodes each batch's crops on its GPU with
    nvImageCodec, into normalized float batches (`make_nvimgcodec_loader`, whose keywords
    `device`, `mean`, `std`, `dtype`, `channels_last` and `decode_threads` it takes; `device=
    "cpu"` runs nvImageCodec's CPU backend). `pin_memory` is refused (the bytes go to the
    decoder, not to the GPU), and so is a `Mix` or a `StreamingDataset`.

    `decoder="simplejpeg"` and `decoder="dali"`, the old names of `loader="torch"` and
    `loader="dali"`, still work and warn (DeprecationWarning) with what to write instead.

    `version` names the version of a dataset grown by `fastpack append` that the loader is to
    read: the dataset is opened at a version (`Dataset(path, version=N)`, the latest by default),
    and one that reads another is refused with a ValueError naming both (a Mix's sources each
    name their own).
    """
    make = _LOADERS[_loader_name(loader, decoder)]
    _check_version(dataset, version)
    options = LoaderOptions(
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        drop_last=drop_last,
        seed=seed,
        pin_memory=pin_memory,
        prefetch_factor=prefetch_factor,
        persistent_workers=persistent_workers,
        other=kwargs,
    )
    return make(dataset, options)


@dataclass(frozen=True, kw_only=True)
class LoaderOptions:
    """`make_loader`'s options as given (None: left out), for the loader it chose; `other`
    holds the keyword arguments it does not name (a DataLoader's, DALI's)."""

    batch_size: int
    shuffle: bool | None = None
    num_workers: int | None = None
    drop_last: bool | None = None
    seed: int | None = None
    pin_memory: bool | None = None
    prefetch_factor: int = 2
    persistent_workers: bool = True
    other: Mapping[str, Any] = field(default_factory=dict)


def _check_version(dataset: Readable, version: int | None) -> None:
    """Refuse a `dataset` that does not read dataset version `version` (None: any)."""
    if version is None:
        return
    if isinstance(dataset, Mix):
        raise ValueError(
            f"{dataset.path}: make_loader(version={version}) over a Mix: open each source at its "
            "version instead (Dataset(path, version=...))"
        )
    if dataset.version != version:
        raise ValueError(
            f"{dataset.path}: make_loader(version={version}), but the dataset reads version "
            f"{dataset.version}: open it with {type(dataset).__name__}(path, version={version})"
        )


def _loader_name(loader: str, decoder: str | None) -> str:
    """The loader `loader` names, or the deprecated `decoder` (with a DeprecationWarning that
    says what to write); a ValueError for a name no loader has."""
    if decoder is not None:
        chosen = _DECODERS.get(decoder)
        if chosen is None:
            raise ValueError(
                f"decoder must be 'simplejpeg' or 'dali', got {decoder!r} (decoder= is "
                "deprecated: write loader='torch' or loader='dali')"
            )
        if loader not in ("torch", chosen):
            raise ValueError(
                f"loader={loader!r} and decoder={decoder!r} choose different loaders: write "
                "loader= alone (decoder= is deprecated)"
            )
        warnings.warn(
            f"make_loader(decoder={decoder!r}) is deprecated: write loader={chosen!r}",
            DeprecationWarning,
            stacklevel=3,
        )
        loader = chosen
    if loader not in _LOADERS:
        names = ", ".join(repr(n) for n in _LOADERS)
        raise ValueError(f"loader must be one of {names}, got {loader!r}")
    return loader


def _torch(dataset: Readable, o: LoaderOptions) -> FastpackLoader:
    """`make_loader(loader="torch")`: `make_torch_loader` with every option as given."""
    return make_torch_loader(
        dataset,
        batch_size=o.batch_size,
        shuffle=o.shuffle,
        num_workers=o.num_workers,
        drop_last=o.drop_last,
        seed=o.seed,
        pin_memory=o.pin_memory,
        prefetch_factor=o.prefetch_factor,
        persistent_workers=o.persistent_workers,
        **o.other,
    )


def _dali(dataset: Readable, o: LoaderOptions) -> DaliLoader:
    """`make_loader(loader="dali")`: `make_dali_loader` over a `Dataset`, the torch-only
    options refused where DALI cannot honour them (`make_loader` says how)."""
    if isinstance(dataset, Mix):
        raise ValueError(
            f"{dataset.path}: loader='dali' reads one dataset's shards; a Mix is read by the "
            "torch loader (loader='torch')"
        )
    if isinstance(dataset, StreamingDataset):
        raise ValueError(
            f"{dataset.path}: loader='dali' reads a local dataset's shards itself "
            "(make_dali_loader) and cannot read a StreamingDataset; give make_loader "
            "Dataset(path) instead, or use loader='torch'"
        )
    where = f"{dataset.path}: loader='dali'"
    _check_torch_only(where, o)
    return make_dali_loader(
        dataset, **_epoch_options(o), dali=DaliOptions.from_keywords(dict(o.other), where)
    )


def _epoch_options(o: LoaderOptions) -> dict[str, Any]:
    """The options of a loader that reads a `Dataset` through `EpochBatchSampler`, with the
    torch loader's defaults for those left out: shuffled, not dropping the last batch, seed 0."""
    return {
        "batch_size": o.batch_size,
        "shuffle": o.shuffle is not False,
        "num_workers": o.num_workers,
        "drop_last": bool(o.drop_last),
        "seed": 0 if o.seed is None else o.seed,
        "prefetch_factor": o.prefetch_factor,
    }


def _check_torch_only(where: str, o: LoaderOptions) -> None:
    """Refuse the torch DataLoader's settings that DALI cannot honour."""
    if o.pin_memory:
        raise ValueError(
            f"{where} cannot honour pin_memory=True: DALI's CPU batches are not in pinned "
            "memory (device='gpu' puts them on the GPU instead)"
        )
    if not o.persistent_workers:
        raise ValueError(
            f"{where} cannot honour persistent_workers=False: DALI's threads live as long as "
            "the loader"
        )


def _nvimgcodec(dataset: Readable, o: LoaderOptions) -> NvImageCodecLoader:
    """`make_loader(loader="nvimgcodec")`: `make_nvimgcodec_loader` over a `Dataset`."""
    if not isinstance(dataset, Dataset):
        raise ValueError(
            f"{dataset.path}: loader='nvimgcodec' reads a Dataset, got "
            f"{type(dataset).__name__}; use loader='torch'"
        )
    if o.pin_memory:
        raise ValueError(
            f"{dataset.path}: loader='nvimgcodec' cannot honour pin_memory=True: its workers' "
            "bytes go to the decoder, and its batches are made on the device"
        )
    return make_nvimgcodec_loader(
        dataset, **_epoch_options(o), persistent_workers=o.persistent_workers, **o.other
    )


# Each loader by its name; a new loader is one more entry.
_LOADERS: dict[
    str, Callable[[Readable, LoaderOptions], FastpackLoader | DaliLoader | NvImageCodecLoader]
] = {
    "torch": _torch,
    "dali": _dali,
    "nvimgcodec": _nvimgcodec,
}
