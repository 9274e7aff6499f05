"""`Opened`: what a `Dataset` opens in one process, and where the members of its samples lie.

The dataset files (manifest and memory-mapped index), the shard reader and the rows of the view
read. A sample number is checked and turned into its index row once (`row`); a member is located
through the index and read from its shard (`payload`, `payloads`), and with `io="pread"` a
batch's members are read at once and the next batch's ahead (`load`). Nothing is kept per sample.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from fastpack.formats import (
    ABSENT,
    CorruptIndexError,
    DatasetFiles,
    FastpackError,
    OffsetOutOfRangeError,
)

from ..fields import SampleDecoder
from ..shard_files import IoChoice, IoMethod, resolve_dataset_io
from ..views import ViewSpec, open_view
from .range_reads import Request
from .shard_reader import ShardReader

INDEX_RELEASE_SAMPLES = 64  # an index release costs per GB mapped: once per batch is cheap


class Opened:
    """The per-process state: dataset files (of dataset version `version`, None: the latest),
    the shard reader, a plain view of the labels, the
    rows of the view read (None: every row), and the decoder of the fields asked for (made on
    first use)."""

    def __init__(
        self, root: Path, io: IoChoice, view: ViewSpec | None, version: int | None = None
    ) -> None:
        self.files = DatasetFiles(root, version=version)
        self.index = self.files.index
        self.io: IoMethod = resolve_dataset_io(io, self.files)
        self.shards = ShardReader(self.files, self.io)
        self.labels: npt.NDArray[np.int64] = self.index.label.view(np.ndarray)
        self.view = None if view is None else open_view(root, self.files.manifest, view)
        self.rows = None if self.view is None else self.view.rows
        self.unreleased = 0  # samples read since the index pages were last released
        self.decoder: SampleDecoder | None = None

    def count(self) -> int:
        """The number of samples: the index's, or the view's rows."""
        return self.index.num_samples if self.rows is None else len(self.rows)

    def row(self, i: int) -> int:
        """The index row of sample `i` (of the view, if one is read), checked."""
        n = self.count()
        if not 0 <= i < n:
            where = self.index.path if self.view is None else f"view {self.view.name!r}"
            raise IndexError(f"{where}: sample {i} out of range [0, {n})")
        return i if self.rows is None else int(self.rows[i])

    def payload(self, i: int, field: str) -> memoryview | bytes:
        """Row `i`'s member of `field`; AbsentFieldError if absent."""
        shard = int(self.index.shard[i])
        if shard >= len(self.files.manifest.shards):
            raise CorruptIndexError(
                f"{self.index.path}: sample {i} is in shard {shard}, the manifest lists "
                f"{len(self.files.manifest.shards)}"
            )
        try:
            _, offset, size = self.index.locate(i, field, self.shards.size(shard))
        except OffsetOutOfRangeError as e:
            raise OffsetOutOfRangeError(f"{e} ({self.files.shard_path(shard)})") from e
        return self.shards.read(shard, offset, size)

    def payloads(
        self, rows: list[int], field: str, places: list[tuple[int, int, int]] | None = None
    ) -> Iterator[memoryview | bytes]:
        """The members of `field` of `rows` in order, located with one index lookup per
        column (`places`, where the caller has them already)."""
        shards = self.shards
        places = self.places(rows, field) if places is None else places
        num_shards = len(self.files.manifest.shards)
        for i, (shard, offset, size) in zip(rows, places, strict=True):
            if shard < num_shards and offset + size <= shards.size(shard):
                yield shards.read(shard, offset, size)
            else:
                yield self.payload(i, field)  # raises the error that names what is wrong

    def places(self, rows: list[int], field: str) -> list[tuple[int, int, int]]:
        """`(shard, offset, size)` of the members of `field` of `rows`, as the index holds them
        (`payloads` checks them against the shards)."""
        index = self.index
        columns = (index.shard[rows], index.offsets(field)[rows], index.sizes(field)[rows])
        return list(zip(*(c.tolist() for c in columns), strict=True))

    def load(self, rows: list[int], batch: Sequence[int], fields: Sequence[str]) -> None:
        """With `io="pread"`: read the members of `fields` of `rows` all at once, and start on
        those of the batch this process reads next (`batch.ahead`, from `make_loader`'s
        sampler). A member that cannot be read is left to the read that names what is wrong."""
        if self.io != "pread":
            return
        ahead: list[Request] = []
        try:  # a hint: what cannot be read ahead is read when its own batch comes
            ahead_ids = [int(i) for i in getattr(batch, "ahead", None) or ()]
            rows_ahead = [self.row(i) for i in ahead_ids if 0 <= i < self.count()]
            ahead = self.requests(rows_ahead, fields)
        except FastpackError:
            ahead = []
        self.shards.load(self.requests(rows, fields), ahead)

    def requests(self, rows: list[int], fields: Sequence[str]) -> list[Request]:
        """The byte ranges `(shard, offset, size)` of the members of `fields` of `rows` that the
        index places inside their shards (the others are read, and fail, one by one)."""
        index, shards = self.index, self.shards
        if not rows:
            return []
        numbers = index.shard[rows].tolist()
        count = len(self.files.manifest.shards)
        requests: list[Request] = []
        for field in dict.fromkeys(f for f in fields if f in index.fields):
            offsets, sizes = index.offsets(field)[rows].tolist(), index.sizes(field)[rows].tolist()
            for shard, offset, size in zip(numbers, offsets, sizes, strict=True):
                if offset != ABSENT and shard < count and offset + size <= shards.size(shard):
                    requests.append((shard, offset, size))
        return requests

    def release(self, samples: int) -> None:
        """After reading `samples` samples: unmap the shard pages, and every
        `INDEX_RELEASE_SAMPLES` samples the index pages (see `Index.release`), so that a
        worker's memory does not grow with the dataset as it reads."""
        self.shards.release()
        self.unreleased += samples
        if self.unreleased >= INDEX_RELEASE_SAMPLES:
            self.index.release()
            self.unreleased = 0

    def close(self) -> None:
        """Close the shard files opened so far (the index map goes with the last reference)."""
        self.shards.close()


def member_name(files: DatasetFiles, i: int, field: str) -> str:
    """How errors name row `i`'s member of `field`."""
    index = files.index
    shard, offset = int(index.shard[i]), int(index.offsets(field)[i])
    return (
        f"{files.shard_path(shard)}: sample {i} (key {index.key(i)}) field {field!r} at offset "
        f"{offset}"
    )
