"""`RangeReads`: a batch's byte ranges read at once, neighbours joined, the next batch ahead."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from fastpack.formats import TruncatedFileError
from fastpack.reader.map_style.range_reads import JOIN_GAP, JOIN_LIMIT, RangeReads, joined


def test_requests_are_sorted_and_close_neighbours_joined() -> None:
    requests = [(1, 0, 100), (0, 5000, 10), (0, 0, 1000), (0, 1000 + JOIN_GAP, 10), (0, 900, 50)]
    # 900 overlaps the first; 5000 and 1000 + JOIN_GAP each lie within JOIN_GAP of the run
    assert joined(requests) == [(0, 0, 1010 + JOIN_GAP), (1, 0, 100)]
    far = [(0, 0, 10), (0, 10 + JOIN_GAP + 1, 10)]
    assert joined(far) == far  # a gap over JOIN_GAP is two reads
    big = [(0, 0, JOIN_LIMIT - 10), (0, JOIN_LIMIT, 10)]
    assert joined(big) == big  # a joined range never passes JOIN_LIMIT


class _Recorder:
    """Reads from real files, one per shard, and records every read asked of it."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self.reads: list[tuple[int, int, int]] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()

    def __call__(self, shard: int, offset: int, size: int) -> bytes:
        with self.lock:
            self.reads.append((shard, offset, size))
            self.threads.add(threading.get_ident())
        with self.files[shard].open("rb") as f:
            f.seek(offset)
            data = f.read(size)
        if len(data) != size:
            raise TruncatedFileError(f"{self.files[shard]}: {size} bytes at {offset}, {len(data)}")
        return data


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    paths = []
    for k in range(2):
        path = tmp_path / f"{k}.bin"
        path.write_bytes(os.urandom(1 << 20))
        paths.append(path)
    return paths


def test_loaded_ranges_serve_reads_and_ahead_is_not_read_twice(shards: list[Path]) -> None:
    recorder = _Recorder(shards)
    reads = RangeReads(recorder, threads=4)
    batch = [(0, 100_000 * k, 5000) for k in range(8)] + [(1, 7, 300)]
    following = [(1, 500_000, 4000), (0, 900_000, 4000)]
    reads.load(batch, ahead=following)
    for shard, offset, size in batch:
        got = reads.get(shard, offset, size)
        assert got is not None
        assert bytes(got) == shards[shard].read_bytes()[offset : offset + size]
    assert reads.get(0, 50_000, 10) is None  # not loaded: the caller reads it itself
    assert reads.get(1, 7, 301) is None  # past a loaded range's end
    reads.load(following)
    assert sorted(recorder.reads) == sorted(batch + following)  # the ahead ranges read once
    assert reads.get(0, 100_000, 10) is None  # the last batch is forgotten
    got = reads.get(1, 500_100, 100)
    assert got is not None
    assert bytes(got) == shards[1].read_bytes()[500_100:500_200]
    assert len(recorder.threads) > 1  # many at a time, in the pool's threads


def test_a_failed_read_raises_when_its_batch_is_loaded(shards: list[Path]) -> None:
    reads = RangeReads(_Recorder(shards), threads=2)
    past_the_end = [(0, (1 << 20) - 10, 100)]
    reads.load([(0, 0, 10)], ahead=past_the_end)  # read ahead: its error waits for its batch
    with pytest.raises(TruncatedFileError, match=r"0\.bin: 100 bytes at 1048566"):
        reads.load(past_the_end)


def test_a_forked_process_reads_with_a_pool_of_its_own(shards: list[Path]) -> None:
    started, release = threading.Event(), threading.Event()
    recorder = _Recorder(shards)

    def read(shard: int, offset: int, size: int) -> bytes:
        if offset == 10:  # the read ahead stays under way in the parent until the fork is done
            started.set()
            release.wait(10)
        return recorder(shard, offset, size)

    reads = RangeReads(read, threads=2)
    reads.load([(0, 0, 10)], ahead=[(0, 10, 10)])
    assert started.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads, and its read ahead, do not exist here
        code = 2
        try:
            release.set()  # the child's own reads of that range must not wait
            reads.load([(0, 10, 10)])
            got = reads.get(0, 10, 10)
            code = 0 if got is not None and bytes(got) == shards[0].read_bytes()[10:20] else 1
        finally:
            os._exit(code)
    release.set()
    deadline = time.monotonic() + 20
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked process waited for a read of its parent's pool")
    assert os.waitstatus_to_exitcode(done[1]) == 0
