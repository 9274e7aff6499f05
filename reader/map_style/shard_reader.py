"""`ShardReader`: the shards of one dataset, each opened on first use by the map-style reader."""

from __future__ import annotations

from fastpack.formats import MANIFEST_NAME, DatasetFiles

from ..shard_files import IoMethod, ShardFile, listed_in, open_shard


class ShardReader:
    """Reads byte ranges of a dataset's shards, opening each shard once, on first use.

    With `io="mmap"` each shard is mapped and payloads are zero-copy views; the pages belong to
    the page cache, so forked workers share them. Pages a process has touched count towards its
    PSS until `release` drops them from its page tables (`MADV_DONTNEED`): without it, workers
    that read a whole epoch would report the whole dataset as theirs. With `io="pread"` each
    payload is one `pread` call on a descriptor kept open per shard. `close` closes them all.
    """

    def __init__(self, files: DatasetFiles, io: IoMethod) -> None:
        self._files = files
        self._io: IoMethod = io
        self._open: dict[int, ShardFile] = {}
        self._touched: set[int] = set()

    def _shard(self, shard: int) -> ShardFile:
        opened = self._open.get(shard)
        if opened is None:
            what = listed_in(shard, self._files.root / MANIFEST_NAME)
            expected = self._files.manifest.shards[shard].bytes
            path = self._files.shard_path(shard)
            opened = self._open[shard] = open_shard(path, expected, self._io, what)
        return opened

    def size(self, shard: int) -> int:
        """Byte size of shard `shard` (opening it if needed)."""
        return self._shard(shard).size

    def read(self, shard: int, offset: int, size: int) -> memoryview | bytes:
        """`size` bytes at `offset` of shard `shard`; the range must be checked already."""
        self._touched.add(shard)
        return self._shard(shard).read(offset, size)

    def release(self) -> None:
        """Unmap the pages read since the last call from this process."""
        for shard in self._touched:
            self._open[shard].release()
        self._touched.clear()

    @property
    def open_count(self) -> int:
        return len(self._open)

    def close(self) -> None:
        """Close every shard opened so far; a later read opens it again."""
        for opened in self._open.values():
            opened.close()
        self._open.clear()
        self._touched.clear()
