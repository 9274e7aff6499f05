"""`ReadAhead` and `chunk_spans`: the bytes of a stream's chunks, read ahead whole and in order."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from fastpack.formats import MANIFEST_NAME, DatasetFiles
from fastpack.reader.shard_files import PreadShard, listed_in
from fastpack.reader.streaming.plan import Chunk
from fastpack.reader.streaming.readahead import ReadAhead, chunk_spans

from tests.reader.conftest import Built


def test_a_chunks_span_holds_every_member_of_its_samples(
    build_dataset: Callable[..., Built],
) -> None:
    files = DatasetFiles(build_dataset(classes=3, per_class=5, shard_size=12_000).path)
    index = files.index
    shard = index.shard.astype(np.int64)
    chunks = []
    for s in range(len(files.manifest.shards)):
        ids = np.flatnonzero(shard == s)
        chunks.append(Chunk(s, int(ids[0]), int(ids[-1]) + 1))
        if len(ids) > 2:
            chunks.append(Chunk(s, int(ids[1]), int(ids[-1])))  # a part of a shard
    for chunk, (start, stop) in zip(chunks, chunk_spans(index, chunks), strict=True):
        for field in index.fields:
            offsets = index.offsets(field)[chunk.start : chunk.stop].astype(np.int64)
            ends = offsets + index.sizes(field)[chunk.start : chunk.stop].astype(np.int64)
            assert start <= int(offsets.min())
            assert int(ends.max()) <= stop
        outside = np.flatnonzero(shard == chunk.shard)
        outside = outside[(outside < chunk.start) | (outside >= chunk.stop)]
        for i in outside.tolist():  # samples of the shard outside the chunk are left out
            jpg = int(index.offsets("jpg")[i])
            assert not start <= jpg < stop


def test_read_ahead_reads_each_chunk_once_and_stops_when_cancelled(
    build_dataset: Callable[..., Built], tmp_path: Path
) -> None:
    files = DatasetFiles(build_dataset(classes=2, per_class=4).path)
    info = files.manifest.shards[0]
    what = listed_in(0, files.root / MANIFEST_NAME)
    shard = PreadShard(files.root / info.name, info.bytes, what)
    reads: list[tuple[int, int]] = []
    read_into = shard.read_into

    def recording(buffer: bytearray, offset: int, limit: int) -> int:
        reads.append((offset, limit))
        return read_into(buffer, offset, limit)

    shard.read_into = recording  # type: ignore[method-assign]
    ahead = ReadAhead([(0, info.bytes), (0, 10)], depth=2, threads=1)
    ahead.start(0, shard)
    ahead.start(0, shard)  # started once only
    deadline = time.monotonic() + 10
    while not reads and time.monotonic() < deadline:
        time.sleep(0.01)
    ahead.close()
    assert reads
    assert reads[0] == (0, info.bytes)  # from the chunk's start, up to its end
    assert len([r for r in reads if r[0] == 0]) == 1  # started once: read once
    shard.close()
    assert shard.read_into(bytearray(4), 0, 4) == 0  # a closed shard reads nothing
