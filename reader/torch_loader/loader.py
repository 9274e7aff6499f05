"""`make_torch_loader`: a torch DataLoader over a `Dataset` that decodes whole batches in its
workers.

torch is imported when a loader is made, so `fastpack.reader` imports without it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ..map_style.dataset import Dataset
from .sampler import EpochBatchSampler

if TYPE_CHECKING:
    from torch.utils.data import DataLoader


def make_torch_loader(
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
    **kwargs: Any,
) -> DataLoader[Any]:
    """A DataLoader yielding `(images (B, H, W, 3) uint8, labels (B,) int64)` torch tensors,
    or with other `Dataset(fields=...)` one value per field, as `Dataset.__getitems__` returns
    them, with arrays as tensors (lists of arrays as lists of tensors, `Padded` values and
    lengths as tensors; strings, bytes, JSON values and None as they are).

    Batches come from an `EpochBatchSampler` (order seeded by `(seed, dataset.epoch)`; under
    torch.distributed, or with RANK and WORLD_SIZE set, each rank reads an equal share) and are
    decoded by `dataset.__getitems__` in the workers. Call `dataset.set_epoch(e)` before each
    epoch. Defaults: `num_workers = min(8, cpu count)`, `pin_memory` when CUDA is available,
    persistent workers (the batches carry the epoch, so they need no restart; this saves a
    fork per epoch), fork workers on Linux, each with single-threaded OpenCV (set in this
    process around the fork, then restored), each decoding its batches straight into its
    `prefetch_factor + 1` shared-memory slots of one batch each: `num_workers * (prefetch_factor
    + 1)` batches of shared memory (`/dev/shm`), allocated here, before the workers start. A
    slot holds every fixed-shape uint8 field of a batch (images, and masks with a transform);
    the other fields travel by value.
    Other keyword arguments go to `DataLoader`.
    """
    import torch  # noqa: PLC0415 - torch is optional, imported on use

    from .batch_slots import BatchSlots  # noqa: PLC0415 - imports torch
    from .dataloader import FastpackLoader, SharedBatches  # noqa: PLC0415 - imports torch

    if num_workers is None:
        num_workers = min(8, os.cpu_count() or 1)
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()
    generator = torch.Generator()
    generator.manual_seed(seed)
    layout = dataset.layout
    slots = BatchSlots(
        num_workers,
        prefetch_factor + 1,  # the batches queued, and the one the trainer holds
        shapes=layout.slot_shapes(batch_size),
        reuse=persistent_workers and num_workers > 0,
    )
    kinds = None if dataset.image_label else layout.kinds
    batches = SharedBatches(slots, kwargs.pop("worker_init_fn", None), kinds)
    options: dict[str, Any] = {
        "batch_sampler": EpochBatchSampler(
            dataset, batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed
        ),
        "num_workers": num_workers,
        "collate_fn": batches.collate,
        "worker_init_fn": batches.install,
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
