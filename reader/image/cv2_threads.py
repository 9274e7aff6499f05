"""OpenCV's thread pool, off while processes that decode in parallel are started."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import cv2


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
