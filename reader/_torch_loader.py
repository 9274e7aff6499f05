"""The torch side of `make_loader`; imported only when a loader is made (it imports torch)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import torch
from torch.utils.data import DataLoader


def collate(
    batch: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """`(images, labels)` numpy arrays from `Dataset.__getitems__` as tensors, without a copy."""
    images, labels = batch
    return torch.from_numpy(images), torch.from_numpy(labels)


@contextmanager
def single_threaded_cv2() -> Iterator[None]:
    """OpenCV limited to one thread while the block runs, then restored.

    Workers must not run OpenCV thread pools (the workers are the parallelism), yet calling
    `cv2.setNumThreads` in a forked child whose parent had a live pool can deadlock in
    pthread_cond_destroy. So the limit is set in the parent around the fork: children inherit
    a pool-less OpenCV.
    """
    previous = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        yield
    finally:
        cv2.setNumThreads(previous)


class FastpackLoader(DataLoader[Any]):
    """A DataLoader whose worker processes start with single-threaded OpenCV."""

    def __iter__(self) -> Any:
        if self.num_workers == 0:
            return super().__iter__()
        with single_threaded_cv2():  # workers are forked (or re-forked) in here
            return super().__iter__()
