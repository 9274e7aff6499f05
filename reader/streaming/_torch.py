"""What the streaming reader knows of torch, which it never imports: the DataLoader worker this
process is, and the registration of a dataset class as torch's `IterableDataset`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For type checkers a registered class is the IterableDataset it is registered as at runtime
    # (`register_iterable`), so `DataLoader(StreamingDataset(...))` type-checks; at runtime it
    # derives from `object`, which keeps torch optional.
    from torch.utils.data import IterableDataset

    IterableBase = IterableDataset[tuple[Any, ...]]
else:
    IterableBase = object


def worker_info() -> tuple[int, int]:
    """`(worker id, number of workers)` inside a DataLoader worker, else `(0, 1)`."""
    data: Any = sys.modules.get("torch.utils.data")
    info = data.get_worker_info() if data is not None else None
    return (0, 1) if info is None else (int(info.id), int(info.num_workers))


def register_iterable(cls: type[Any]) -> None:
    """Make DataLoader treat `cls` as an IterableDataset (an ABC registration), when torch is
    installed."""
    try:
        from torch.utils.data import IterableDataset  # noqa: PLC0415 -- optional: torch
    except ImportError:
        return
    if not issubclass(cls, IterableDataset):
        IterableDataset.register(cls)
