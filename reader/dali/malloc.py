"""A fixed malloc mmap threshold, which keeps the host memory of DALI's CPU path flat.

glibc serves large blocks with mmap, but raises that threshold to the size of every mmapped block
it frees (up to 32 MiB). DALI's decoded images (hundreds of KiB to MiB, every size) then come
from the heap arenas of its worker threads, which fragment: resident memory wanders up and down
by tens of MiB from epoch to epoch. A fixed threshold (`mallopt(M_MMAP_THRESHOLD)`, the same as the
environment variable `MALLOC_MMAP_THRESHOLD_`) keeps such blocks in mmap, returned on free.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
ENV_VARIABLE = "MALLOC_MMAP_THRESHOLD_"


def fix_mmap_threshold(nbytes: int) -> bool:
    """Set glibc's mmap threshold to `nbytes` for the whole process; True if it was set.

    Does nothing (False) where the C library is not glibc, or where `MALLOC_MMAP_THRESHOLD_`
    is in the environment: the user's own setting wins.
    """
    if nbytes < 0:
        raise ValueError(f"malloc mmap threshold must be >= 0 bytes, got {nbytes}")
    if ENV_VARIABLE in os.environ:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None or not hasattr(libc, "gnu_get_libc_version"):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, nbytes))
