"""The `StreamingDataset` side of `make_torch_loader` (torch-free): the copy of the dataset that
yields whole batches, and the refusal of loader arguments that contradict the dataset."""

from __future__ import annotations

import copy

from ..streaming.dataset import StreamingDataset


def batched_copy(
    dataset: StreamingDataset,
    batch_size: int,
    *,
    shuffle: bool | None,
    seed: int | None,
    drop_last: bool | None,
) -> StreamingDataset:
    """A shallow copy of `dataset` that yields batches of `batch_size` and shares its epoch
    (`set_epoch` on either reaches both). A StreamingDataset shuffles, seeds and splits the
    epoch as it was made to: `shuffle`, `seed` and `drop_last` may be None (the dataset's) or
    its own values; any other value, or a `batch_size` other than one the dataset already has,
    is a ValueError that names each."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    own = {
        "batch_size": dataset.batch_size or batch_size,
        "shuffle": dataset.shuffle,
        "seed": dataset.seed,
        "drop_last": dataset.drop_last,
    }
    given = {"batch_size": batch_size, "shuffle": shuffle, "seed": seed, "drop_last": drop_last}
    conflicts = [
        f"{name}={value!r} (the dataset's is {own[name]!r})"
        for name, value in given.items()
        if value is not None and value != own[name]
    ]
    if conflicts:
        raise ValueError(
            f"{dataset.path}: make_loader got {', '.join(conflicts)}; a StreamingDataset reads "
            "with the shuffle, seed, drop_last and batch_size it was made with: leave these "
            "arguments out or give the same values"
        )
    batched = copy.copy(dataset)  # shares the epoch; the index and decoder are opened anew
    batched.batch_size = batch_size
    return batched
