"""What a `StreamingDataset` is made with, as frozen values checked when they are made: how shards
are fetched (`FetchOptions`) and every option of the dataset (`StreamingOptions`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastpack.storage import RetryPolicy

from ..image.transforms import Transform
from ..shard_files import IoChoice, check_io
from ..versions import check_version
from ..views import ViewSpec


@dataclass(frozen=True, kw_only=True)
class FetchOptions:
    """How shards are fetched: up to `threads` shards at once (None: as many as the stream
    fetches ahead, which it chooses from the download and read times it measures; see
    `PrefetchDepth`), each in ranged GETs of `part_bytes` over `part_threads` connections
    (a shard of at most `part_bytes` is one GET), retried by `retry`."""

    threads: int | None = None
    part_threads: int = 4
    part_bytes: int = 8 * 2**20
    retry: RetryPolicy = dataclasses.field(default_factory=RetryPolicy)


@dataclass(frozen=True, kw_only=True)
class StreamingOptions:
    """The keyword options of `StreamingDataset(path, ...)`, with `rank` and `world_size`
    resolved (`ranks.resolve_rank`). Checked when made (and when replaced): a ValueError names
    the option, its value and what was expected."""

    transform: Transform | None = None
    seed: int = 0
    shuffle: bool = True
    shuffle_window: int = 4
    prefetch: int | None = None
    drop_last: bool = False
    rank: int = 0
    world_size: int = 1
    cache_dir: str | os.PathLike[str] | None = None
    cache_limit: int | None = None
    storage_options: Mapping[str, Any] | None = None
    io: IoChoice = "auto"
    fetch: FetchOptions = dataclasses.field(default_factory=FetchOptions)
    field: str | None = None
    fields: Sequence[str] | None = None
    pad: bool = False
    pad_value: float = 0
    drop_empty_boxes: bool = True
    batch_size: int | None = None
    view: ViewSpec | None = None
    version: int | None = None  # the dataset version read (None: the latest)

    def __post_init__(self) -> None:
        kinds = {"seed": int, "pad": bool, "pad_value": float, "drop_empty_boxes": bool}
        for name, kind in kinds.items():  # a numpy integer, 1 for True, ...: the plain value
            object.__setattr__(self, name, kind(getattr(self, name)))
        check_io(self.io)
        object.__setattr__(self, "version", check_version(self.version, "StreamingDataset"))
        checks = (
            ("seed", self.seed >= 0, ">= 0"),
            ("shuffle_window", self.shuffle_window >= 1, ">= 1"),
            ("prefetch", self.prefetch is None or self.prefetch >= 0, ">= 0 or None"),
            ("world_size", self.world_size >= 1, ">= 1"),
            ("rank", 0 <= self.rank < self.world_size, f"in [0, {self.world_size})"),
            ("batch_size", self.batch_size is None or self.batch_size >= 1, ">= 1 or None"),
        )
        for name, ok, expected in checks:
            if not ok:
                raise ValueError(
                    f"StreamingDataset {name}={getattr(self, name)!r}: expected {expected}"
                )

    @classmethod
    def of(cls, given: Mapping[str, Any], **resolved: Any) -> StreamingOptions:
        """The options named in `given` (a call's arguments: the names that are no option are
        left out), with the `resolved` ones in place of those given."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**{k: v for k, v in given.items() if k in names}, **resolved})

    @property
    def ahead_limit(self) -> int:
        """The most shards a stream fetches ahead of the one it reads: `prefetch`, else chosen
        as the stream goes (`PrefetchDepth`), up to one window with a `cache_limit`, else two."""
        if self.prefetch is not None:
            return self.prefetch
        return self.shuffle_window if self.cache_limit is not None else 2 * self.shuffle_window
