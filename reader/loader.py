"""`make_loader`: the one switch between the torch DataLoader (simplejpeg in its workers) and
DALI over the same dataset. It is the only module that knows both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .dali import DaliLoader, make_dali_loader
from .image import CenterCrop, RandomResizedCrop
from .map_style import Dataset
from .torch_loader import make_torch_loader

if TYPE_CHECKING:
    from torch.utils.data import DataLoader

Decoder = Literal["simplejpeg", "dali"]


def make_loader(
    dataset: Dataset,
    *,
    batch_size: int,
    shuffle: bool = True,
    num_workers: int | None = None,
    drop_last: bool = False,
    seed: int = 0,
    pin_memory: bool | None = None,
    prefetch_factor: int = 2,
    persistent_workers: bool = True,
    decoder: Decoder = "simplejpeg",
    **kwargs: Any,
) -> DataLoader[Any] | DaliLoader:
    """A loader yielding `(images (B, H, W, 3) uint8, labels (B,) int64)` batches.

    `decoder="simplejpeg"` (default): a torch DataLoader whose workers decode whole batches
    (see `make_torch_loader` for the options). `decoder="dali"` reads the same shards with
    DALI's CPU operators instead (see `make_dali_loader`; the dataset's transform picks its
    training or evaluation pipeline, `num_workers` becomes DALI's thread count, other keyword
    arguments go to `make_dali_loader`).
    """
    if decoder == "dali":
        return make_dali_loader(
            dataset.path,
            batch_size=batch_size,
            shuffle=shuffle,
            drop_last=drop_last,
            num_threads=num_workers,
            seed=seed,
            **_dali_transform_options(dataset),
            **kwargs,
        )
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


def _dali_transform_options(dataset: Dataset) -> dict[str, Any]:
    """The `make_dali_loader` arguments that do what `dataset.transform` does."""
    transform = dataset.transform
    if isinstance(transform, RandomResizedCrop):
        shape = transform.output_shape
        options = {"train": True, "scale": transform.scale, "ratio": transform.ratio}
    elif isinstance(transform, CenterCrop):
        shape = transform.output_shape
        options = {"train": False, "resize_size": transform.resize}
    else:
        raise ValueError(
            f"{dataset.path}: decoder='dali' needs a RandomResizedCrop or CenterCrop transform, "
            f"got {transform!r}"
        )
    if shape[0] != shape[1]:
        raise ValueError(f"{dataset.path}: decoder='dali' makes square crops, got {shape}")
    return {"size": shape[0], **options}
