"""`make_torch_loader`: a torch DataLoader over a `Dataset` or a `StreamingDataset` whose
workers decode whole batches into shared memory.

torch is imported when a loader is made, so `fastpack.reader` imports without it.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import sys
from typing import TYPE_CHECKING, Any

from ..map_style.dataset import Dataset
from ..mix import Mix
from ..order.sampler import EpochBatchSampler
from ..stats import LoaderMeter
from ..streaming.dataset import StreamingDataset
from .streaming import batched_copy

if TYPE_CHECKING:
    from .dataloader import FastpackLoader


def make_torch_loader(  # noqa: PLR0913 -- public signature
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
    **kwargs: Any,
) -> FastpackLoader:
    """A DataLoader yielding `(images (B, H, W, 3) uint8, labels (B,) int64)` torch tensors,
    or with other `Dataset(fields=...)` one value per field, as `Dataset.__getitems__` returns
    them, with arrays as tensors (lists of arrays as lists of tensors, `Padded` values and
    lengths as tensors; strings, bytes, JSON values and None as they are).

    A `Dataset`: batches come from an `EpochBatchSampler` (order seeded by `(seed,
    dataset.epoch)`, `shuffle` default True, `seed` 0; `drop_last` drops the rank's last
    partial batch; under torch.distributed, or with RANK and WORLD_SIZE set, each rank reads an
    equal share) and are decoded by `dataset.__getitems__` in the workers.

    A `StreamingDataset`: each worker reads its stream of the rank's epoch and decodes its
    batches itself (a copy of the dataset with `batch_size` set, which shares the dataset's
    epoch, the user's dataset otherwise unchanged; `DataLoader(batch_size=None)`); the last
    batch of each worker's stream may be short. Its order, seed and `drop_last` are the
    dataset's: `shuffle`, `seed` and `drop_last` may be left out (None) or repeat the dataset's
    values, anything else is a ValueError naming it. `len(loader)` counts batches
    (`StreamingDataset.num_batches`). The loader (a `StreamingLoader`) is resumable:
    `state_dict()` at any batch boundary, a few integers and names, and `load_state_dict(state)`
    reads the rest of that epoch with any world size, worker count and batch size: every sample
    not read before the stop, once, but for the new ranks' padding (`streaming.elastic`).

    Call `dataset.set_epoch(e)` before each epoch. Defaults: `num_workers = min(8, cpu
    count)`, `pin_memory` when CUDA is available, persistent workers (they follow `set_epoch`:
    a `Dataset`'s batches carry the epoch, a `StreamingDataset` shares it with its workers;
    this saves a fork per epoch; they go on into the next epoch's first batches while the
    trainer takes this epoch's last ones, so that an epoch's first batch does not wait, and drop
    them when the next iteration is over another epoch or position: `order.stream`, and over a
    `StreamingDataset` `streaming.run_on`), fork workers on Linux, each with single-threaded
    OpenCV (set in this process around the fork, then restored), each decoding its batches
    straight into its `prefetch_factor + 1` shared-memory slots of one batch each:
    `num_workers * (prefetch_factor + 1)` batches of shared memory (`/dev/shm`), allocated
    here, before the workers start. A slot holds every fixed-shape uint8 field of a batch
    (images, and masks with a transform); the other fields travel by value.
    Other keyword arguments go to `DataLoader`.

    `loader.stats()` says what the loader did since its previous call: the trainer's wait for
    batches, each worker's time reading, decoding and allocating, the bytes read and fetched,
    and a verdict (`fastpack.reader.stats.LoaderStats`; the workers count into shared memory).
    """
    import torch  # noqa: PLC0415 -- optional: torch

    from .batch_slots import BatchSlots  # noqa: PLC0415 -- optional: torch
    from .dataloader import FastpackLoader, SharedBatches, StreamingLoader  # noqa: PLC0415 -- optional: torch

    if num_workers is None:
        num_workers = min(8, os.cpu_count() or 1)
    read, options, generator_seed = _batching(
        dataset,
        batch_size,
        shuffle=shuffle,
        seed=seed,
        drop_last=drop_last,
        workers=num_workers,
    )
    streaming = isinstance(read, StreamingDataset)
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()
    generator = torch.Generator()
    generator.manual_seed(generator_seed)
    layout = dataset.layout
    slots = BatchSlots(
        num_workers,
        prefetch_factor + 1,  # the batches queued, and the one the trainer holds
        shapes=layout.slot_shapes(batch_size),
        reuse=persistent_workers and num_workers > 0,
    )
    kinds = None if layout.image_label else layout.kinds
    meter = LoaderMeter.for_workers(num_workers)  # the workers' counters, made before they start
    run = None if streaming else multiprocessing.RawValue(ctypes.c_int64, 0)  # order.stream
    batches = SharedBatches(
        slots, meter.worker_init(kwargs.pop("worker_init_fn", None)), kinds, run=run
    )
    options.update(
        num_workers=num_workers,
        collate_fn=batches.collate,
        worker_init_fn=batches.install,
        pin_memory=pin_memory,
        generator=generator,
    )
    if num_workers > 0:
        options["prefetch_factor"] = prefetch_factor
        options["persistent_workers"] = persistent_workers
        if sys.platform.startswith("linux"):
            options["multiprocessing_context"] = "fork"
    options.update(kwargs)
    loader_class = StreamingLoader if streaming else FastpackLoader
    loader = loader_class(read, **options)  # type: ignore[arg-type]
    loader.meter = meter
    loader.stream_run = run
    return loader


def _batching(  # noqa: PLR0913 -- keyword inputs
    dataset: Dataset | Mix | StreamingDataset,
    batch_size: int,
    *,
    shuffle: bool | None,
    seed: int | None,
    drop_last: bool | None,
    workers: int,
) -> tuple[Dataset | Mix | StreamingDataset, dict[str, Any], int]:
    """The dataset the DataLoader reads, its batching options and its generator's seed: a
    `Dataset` through an `EpochBatchSampler` (which tells each batch of a `pread` dataset the
    one its worker reads next), a `StreamingDataset` as a copy that batches."""
    if isinstance(dataset, StreamingDataset):
        batched = batched_copy(dataset, batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)
        return batched, {"batch_size": None}, dataset.seed
    if isinstance(dataset, Mix):  # the mix's own order: its seed and shuffle by default
        seed = dataset.seed if seed is None else seed
        shuffle = dataset.shuffle if shuffle is None else shuffle
    seed = 0 if seed is None else seed
    sampler = EpochBatchSampler(
        dataset,
        batch_size,
        shuffle=shuffle is not False,
        drop_last=bool(drop_last),
        seed=seed,
        ahead_stride=max(1, workers) if dataset.io == "pread" else 0,
    )
    return dataset, {"batch_sampler": sampler}, seed
