"""Which part of the data this process reads, and which GPU it decodes on.

The one resolver of rank and world size for every reader (the torch loader's sampler, the
streaming dataset, DALI): arguments first, then an initialized torch.distributed process group,
then the `RANK` and `WORLD_SIZE` environment variables (as torchrun sets them; empty counts as
unset), else a single process.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def _env_int(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"environment variable {name}={text!r} is not an integer") from None


def _distributed_rank() -> tuple[int, int] | None:
    """(rank, world size) of an initialized torch.distributed process group, else None. torch
    is not imported here: a process group exists only where the program imported it."""
    dist: Any = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return None


def resolve_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """`(rank, world_size)` of this process, checked: `world_size >= 1`, `0 <= rank < world`."""
    found = _distributed_rank()
    if found is None:
        found_rank, found_world = _env_int("RANK"), _env_int("WORLD_SIZE")
    else:
        found_rank, found_world = found
    r = rank if rank is not None else (found_rank if found_rank is not None else 0)
    world = world_size if world_size is not None else (found_world or 1)
    if world < 1:
        raise ValueError(f"world size must be at least 1, got {world}")
    if not 0 <= r < world:
        raise ValueError(f"rank must be in [0, {world}), got {r}")
    return r, world


def local_device_id() -> int:
    """The GPU of this process: LOCAL_RANK if set, else torch's current CUDA device, else 0."""
    local = _env_int("LOCAL_RANK")
    if local is not None:
        return local
    try:
        import torch  # noqa: PLC0415 -- optional: torch
    except ImportError:
        return 0
    return int(torch.cuda.current_device()) if torch.cuda.is_available() else 0
