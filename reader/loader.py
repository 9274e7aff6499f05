"""`make_loader`: a torch DataLoader over a `Dataset` that decodes whole batches in its workers.

torch is imported when a loader is made, so `fastpack.reader` imports without it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from .dataset import Dataset
from .sampler import EpochBatchSampler

if TYPE_CHECKING:
    from torch.utils.data import DataLoader


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
    persistent_workers: bool = False,
    **kwargs: Any,
) -> DataLoader[Any]:
    """A DataLoader yielding `(images (B, H, W, 3) uint8, labels (B,) int64)` torch tensors.

    Batches come from an `EpochBatchSampler` (order seeded by `(seed, dataset.epoch)`) and are
    decoded by `dataset.__getitems__` in the workers. Call `dataset.set_epoch(e)` before each
    epoch. Defaults: `num_workers = min(8, cpu count)`, `pin_memory` when CUDA is available,
    fork workers on Linux, each with single-threaded OpenCV (set in this process around the
    fork, then restored). Other keyword arguments go to `DataLoader`.
    """
    import torch  # noqa: PLC0415 - torch is optional, imported on use

    from ._torch_loader import FastpackLoader, collate  # noqa: PLC0415 - imports torch

    if num_workers is None:
        num_workers = min(8, os.cpu_count() or 1)
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()
    generator = torch.Generator()
    generator.manual_seed(seed)
    options: dict[str, Any] = {
        "batch_sampler": EpochBatchSampler(
            dataset, batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed
        ),
        "num_workers": num_workers,
        "collate_fn": collate,
        "pin_memory": pin_memory,
        "generator": generator,
    }
    if num_workers > 0:
        options["prefetch_factor"] = prefetch_factor
        options["persistent_workers"] = persistent_workers
        if sys.platform.startswith("linux"):
            options["multiprocessing_context"] = "fork"
    options.update(kwargs)
    return FastpackLoader(dataset, **options)  # type: ignore[arg-type]
