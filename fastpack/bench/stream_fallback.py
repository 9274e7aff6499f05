"""A plain torch DataLoader over a `StreamingDataset`, for a `make_loader` that does not take
one yet (it raises TypeError or AttributeError for it). Drop this module once it does."""

from __future__ import annotations

from typing import Any

from fastpack.reader import StreamingDataset

NOTE = "plain torch DataLoader: make_loader does not take a StreamingDataset yet"


def plain_dataloader(dataset: StreamingDataset, *, batch_size: int, num_workers: int) -> Any:
    from torch.utils.data import DataLoader  # noqa: PLC0415 - torch is optional

    extra: dict[str, Any] = {"persistent_workers": True} if num_workers > 0 else {}
    return DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, **extra)
