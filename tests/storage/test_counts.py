"""The process's counts of bytes fetched and calls retried (what `loader.stats()` reports)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from fastpack.storage import RetryPolicy
from fastpack.storage.copy import copy_file
from fastpack.storage.counts import IO_COUNTS
from fastpack.storage.download import Expected, RemoteObject, download
from fastpack.storage.retry import retry_call
from fastpack.storage.transfer import Transfer

DATA = os.urandom(100_000)


class CutOnce:
    """Ranges of `DATA` in 10 kB buffers; the first range is cut after one buffer."""

    def __init__(self) -> None:
        self.cut = False

    def chunks(self, path: str, start: int, end: int) -> Iterator[memoryview]:
        for offset in range(start, end, 10_000):
            if offset > start and not self.cut:
                self.cut = True
                raise ConnectionResetError("cut")
            yield memoryview(DATA)[offset : min(offset + 10_000, end)]


def test_a_download_counts_every_byte_that_came_and_the_retry(tmp_path: Path) -> None:
    fetched, retries = IO_COUNTS.fetched_bytes, IO_COUNTS.retries
    download(
        RemoteObject(CutOnce(), "a", "mem://a"),
        tmp_path / "a",
        Expected(size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest()),
        Transfer(retry=RetryPolicy(attempts=2, backoff_s=0), part_bytes=len(DATA), threads=1),
    )
    assert (tmp_path / "a").read_bytes() == DATA
    assert IO_COUNTS.fetched_bytes - fetched == len(DATA) + 10_000  # the cut buffer, then all
    assert IO_COUNTS.retries - retries == 1


def test_a_copy_counts_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "src").write_bytes(DATA)
    fetched = IO_COUNTS.fetched_bytes
    transfer = Transfer(part_bytes=30_000, threads=2)
    copy_file(tmp_path / "src", tmp_path / "dest", size=len(DATA), transfer=transfer)
    assert IO_COUNTS.fetched_bytes - fetched == len(DATA)


def test_retry_call_counts_each_retry() -> None:
    failures = iter([OSError("reset"), OSError("reset")])

    def flaky() -> int:
        error = next(failures, None)
        if error is not None:
            raise error
        return 1

    retries = IO_COUNTS.retries
    assert retry_call(flaky, "object", RetryPolicy(attempts=3, backoff_s=0)) == 1
    assert IO_COUNTS.retries - retries == 2
