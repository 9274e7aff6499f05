"""Copying one file whole from a mounted (network) file system to local disk: large sequential
reads of several parts at once, each part retried on its own, an atomic rename at the end.

A network file system delivers a file fastest to a few sequential readers, each reading large
blocks: the client's readahead keeps requests in flight. `copy_file` reads `threads` parts of
`part_bytes` at once (its `Transfer`), each in blocks of `BLOCK_BYTES`, and writes them at their
offsets in a file that has its full size from the start. The copy appears under its name only
when every byte is in it. The source is checked for size, not checksummed: it is a file system,
read as the readers read it in place.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fastpack.formats import DatasetNotFoundError, TruncatedFileError

from .counts import IO_COUNTS
from .download import byte_ranges, temp_name
from .retry import RetryPolicy, retry_call
from .transfer import Transfer

BLOCK_BYTES = 4 * 2**20
_PERMANENT = (FileNotFoundError, PermissionError, TruncatedFileError)


def _copy_part(source: Path, fd_out: int, start: int, stop: int) -> None:
    fd_in = os.open(source, os.O_RDONLY)
    try:
        buffer = bytearray(min(BLOCK_BYTES, stop - start))
        offset = start
        while offset < stop:
            view = memoryview(buffer)[: min(len(buffer), stop - offset)]
            n = os.preadv(fd_in, [view], offset)
            if n == 0:
                raise TruncatedFileError(
                    f"{source}: ended at {offset} bytes while copying bytes [{start}, {stop})"
                )
            os.pwrite(fd_out, view[:n], offset)
            IO_COUNTS.fetched(n)
            offset += n
    finally:
        os.close(fd_in)


def copy_file(
    source: Path,
    dest: Path,
    *,
    size: int,
    transfer: Transfer | None = None,
    tmp: Path | None = None,
) -> None:
    """Copy the first `size` bytes of `source` (which must have at least that many) to `dest`.

    `tmp` is the unfinished copy (default: a private name beside `dest`); it is removed if the
    copy fails. A missing source raises `DatasetNotFoundError`, a shorter one
    `TruncatedFileError`, each naming it; other errors of a part are retried by the transfer's
    `retry` (then `FetchError`)."""
    transfer = transfer or Transfer()
    policy = transfer.retry or RetryPolicy()
    tmp = tmp or temp_name(dest)
    try:
        found = os.stat(source).st_size
    except FileNotFoundError as e:
        raise DatasetNotFoundError(f"{source}: not found") from e
    if found < size:
        raise TruncatedFileError(f"{source}: has {found} bytes, expected {size}")
    parts = byte_ranges(size, transfer.part_bytes)
    fd_out = os.open(tmp, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd_out, size)

        def copy(part: tuple[int, int]) -> None:
            retry_call(
                lambda: _copy_part(source, fd_out, *part),
                f"{source} bytes {part}",
                policy,
                permanent=_PERMANENT,
            )

        with ThreadPoolExecutor(max(1, min(transfer.threads, len(parts)))) as pool:
            for _ in pool.map(copy, parts):
                pass
    except BaseException:
        os.close(fd_out)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd_out)
    os.replace(tmp, dest)
