"""`make_loader`: a torch DataLoader over a `Dataset` that decodes whole batches in its workers.

torch is imported when a loader is made, so `fastpack.reader` imports without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
import numpy.typing as npt

from .dataset import Dataset
from .sampler import EpochBatchSampler

if TYPE_CHECKING:
    import torch
    from torch.utils.data import DataLoader


def collate(
    batch: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """`(images, labels)` numpy arrays from `Dataset.__getitems__` as tensors, without a copy."""
    import torch  # noqa: PLC0415 - torch is optional, imported on use

    images, labels = batch
    return torch.from_numpy(images), torch.from_numpy(labels)


class WorkerInit:
    """Calls the user's `worker_init_fn`, if any, in each worker."""

    def __init__(self, then: Callable[[int], None] | None = None) -> None:
        self.then = then

    def __call__(self, worker_id: int) -> None:
        if self.then is not None:
            self.then(worker_id)


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
    fork workers on Linux, OpenCV limited to one thread (in this process too, so that
    the forked workers inherit it). Other keyword arguments go to `DataLoader`.
    """
    import torch  # noqa: PLC0415 - torch is optional, imported on use
    from torch.utils.data import DataLoader  # noqa: PLC0415

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
        # Workers are the parallelism: OpenCV runs one thread in each. This is set here, in the
        # process that forks them, because `cv2.setNumThreads` in a forked child can deadlock on
        # the parent's live OpenCV thread pool. It limits OpenCV in this process too.
        cv2.setNumThreads(1)
        options["prefetch_factor"] = prefetch_factor
        options["persistent_workers"] = persistent_workers
        if sys.platform.startswith("linux"):
            options["multiprocessing_context"] = "fork"
    options.update(kwargs)
    options["worker_init_fn"] = WorkerInit(kwargs.get("worker_init_fn"))
    return DataLoader(dataset, **options)  # type: ignore[arg-type]
