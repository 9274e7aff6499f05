"""`Transfer`: how one object is fetched whole, the settings a download and a copy share."""

from __future__ import annotations

from dataclasses import dataclass

from .retry import RetryPolicy

DEFAULT_PART_BYTES = 32 * 2**20


@dataclass(frozen=True, kw_only=True)
class Transfer:
    """How an object is fetched: in parts of `part_bytes` (an object of at most `part_bytes`
    is one part: one ranged GET, or one sequential read of a file), `threads` of them at once,
    each retried by `retry` (None: the location's policy, or the default one). `bulk` where
    many such downloads follow (a dataset's shards): `Location.download` reads through
    `Location.bulk_reads`; a copy from a file system has one client and ignores it."""

    retry: RetryPolicy | None = None
    part_bytes: int = DEFAULT_PART_BYTES
    threads: int = 4
    bulk: bool = False
