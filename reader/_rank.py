"""Which part of the data this process reads, and which GPU it decodes on."""

from __future__ import annotations

import os


def _env_int(name: str) -> int | None:
    text = os.environ.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"environment variable {name}={text!r} is not an integer") from None


def _distributed_rank() -> tuple[int, int] | None:
    """(rank, world size) of an initialized torch.distributed process group, else None."""
    try:
        import torch.distributed as dist  # noqa: PLC0415 - torch is optional
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None


def resolve_shard(shard_id: int | None, num_shards: int | None) -> tuple[int, int]:
    """(shard_id, num_shards) for this process.

    Arguments given win; what is missing comes from torch.distributed when a process group is
    initialized, else from the RANK and WORLD_SIZE environment variables, else (0, 1).
    """
    found = _distributed_rank()
    rank, world = found if found is not None else (_env_int("RANK"), _env_int("WORLD_SIZE"))
    shard = shard_id if shard_id is not None else (rank if rank is not None else 0)
    shards = num_shards if num_shards is not None else (world if world is not None else 1)
    if shards < 1:
        raise ValueError(f"num_shards must be at least 1, got {shards}")
    if not 0 <= shard < shards:
        raise ValueError(f"shard_id must be in [0, {shards}), got {shard}")
    return shard, shards


def local_device_id() -> int:
    """The GPU of this process: LOCAL_RANK if set, else torch's current CUDA device, else 0."""
    local = _env_int("LOCAL_RANK")
    if local is not None:
        return local
    try:
        import torch  # noqa: PLC0415 - torch is optional
    except ImportError:
        return 0
    return int(torch.cuda.current_device()) if torch.cuda.is_available() else 0
