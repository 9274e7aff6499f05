"""`SharedEpoch`: the epoch number in shared memory, so that DataLoader workers that keep their
copy of a dataset across epochs (`persistent_workers=True`) still see `set_epoch`. Torch-free."""

from __future__ import annotations

import ctypes
import multiprocessing
import operator
from multiprocessing.context import get_spawning_popen
from typing import Any

from ..order.schema import INT64_MAX


class SharedEpoch:
    """An epoch number in one shared 8-byte value. Processes forked after it was made share it;
    a process being spawned (or forkserver-started) receives it shared, by its file descriptor.
    Any other pickle or deep copy carries the number only (a fresh, unshared value)."""

    def __init__(self, epoch: int = 0) -> None:
        self._value: Any = multiprocessing.RawValue(ctypes.c_int64, epoch)

    def get(self) -> int:
        return int(self._value.value)

    def set(self, epoch: int) -> int:
        """Share `epoch`, an integer in [0, 2**63 - 1] (a TypeError for a float or a string, a
        ValueError out of range); returns it as an int."""
        value = operator.index(epoch)
        if not 0 <= value <= INT64_MAX:
            raise ValueError(f"epoch must be >= 0 and at most 2**63 - 1, got {epoch}")
        self._value.value = value
        return value

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if get_spawning_popen() is not None:  # pickled for a process being started
            return _shared, (self._value,)
        return SharedEpoch, (self.get(),)

    def __repr__(self) -> str:
        return f"SharedEpoch({self.get()})"


def _shared(value: Any) -> SharedEpoch:
    """A `SharedEpoch` over `value`, the shared value the spawning process sent."""
    epoch = SharedEpoch.__new__(SharedEpoch)
    epoch._value = value
    return epoch
