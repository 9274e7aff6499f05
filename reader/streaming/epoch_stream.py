"""One stream's reading of one epoch: its shards opened from where they are (`Shards`: from the
dataset's `Site`, within its `CacheBudget`), and its parts read window by window into samples
or batches (`read_epoch`), each window's shards released once it has been read."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import DatasetFiles, Index

from ..stats.recorder import recorded_batches
from .budget import CacheBudget
from .cache import ShardCache
from .options import FetchOptions, StreamingOptions
from .plan import Chunk, Part
from .readahead import ReadAhead, chunk_spans
from .reading import Columns, Span, WindowReader
from .resume import Cursor
from .site import Site
from .sources import LocalShards, RemoteShards, ShardSource
from .window import Window, locate_window

Sample = tuple[Any, ...]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Shards:
    """How a stream opens its shards: from `site`, within `budget`, fetched with `fetch`;
    `resident`: the node's resident shards (never evicted; None: none); `rows`: a view's rows,
    which its chunks number (None: the dataset's)."""

    site: Site
    budget: CacheBudget
    fetch: FetchOptions
    _: KW_ONLY
    resident: Sequence[IntArray] | None = None
    rows: IntArray | None = None

    def open(self, chunks: Sequence[Chunk], index: Callable[[], Index]) -> ShardSource:
        """The shards of `chunks` (a stream's, in reading order), read in place or fetched into
        the cache; `index` opens the index, in which a mount's read-ahead looks chunks up."""
        site, cached = self.site, self.site.cached
        shards = [c.shard for c in chunks]
        if cached is None:
            readahead = None
            if site.mount and site.io == "pread":
                readahead = ReadAhead(
                    chunk_spans(index(), self._in_rows(chunks)),
                    depth=2 * self.budget.window,
                    threads=self.budget.window,
                )
            return LocalShards(site.shards, site.manifest, shards, site.io, readahead)
        if cached.index_rows is not None:  # the first window's rows (one shard) beside its download
            cached.index_rows.fetch_ahead(shards[:1])
        return RemoteShards(
            cached.origin,
            site.manifest,
            ShardCache(cached.root, self.budget.limit),
            shards,
            depth=self.budget.depth(),
            io=site.io,
            options=self.fetch,
            keep=[site.manifest.shards[s].name for r in self.resident or () for s in r.tolist()],
            before_open=None if cached.index_rows is None else cached.index_rows.ensure,
        )

    def _in_rows(self, chunks: Sequence[Chunk]) -> Sequence[Chunk]:
        """`chunks` as dataset rows: a view's chunks number its rows, read ahead the rows they
        span."""
        rows = self.rows
        if rows is None:
            return chunks
        return [Chunk(c.shard, int(rows[c.start]), int(rows[c.stop - 1]) + 1) for c in chunks]


@dataclass(frozen=True, kw_only=True)
class Reading:
    """How a stream reads epoch `epoch` of seed `seed`: each sample with the transform's `draws`
    random draws (0: none), the byte ranges of the field `image` looked up ahead (None: none),
    one sample at a time or, with `batch_size`, in batches decoded in place."""

    seed: int
    epoch: int
    draws: int
    image: str | None
    batch_size: int | None

    @classmethod
    def of(cls, options: StreamingOptions, columns: Columns, epoch: int) -> Reading:
        """How a dataset made with `options`, whose samples are `columns`, reads `epoch`."""
        transform = options.transform
        return cls(
            seed=options.seed,
            epoch=epoch,
            draws=0 if transform is None else transform.draws,
            image=columns.field if columns.layout.image_label else None,
            batch_size=options.batch_size,
        )


def read_epoch(
    parts: Sequence[Part],
    shards: ShardSource,
    reader: WindowReader,
    reading: Reading,
    cursor: Cursor,
) -> Generator[Sample, None, None]:
    """The samples (or batches) of `parts`, whose shards `shards` opens (closed when the
    iteration ends, is closed or is garbage-collected), decoded by `reader` and counted into
    `cursor` before each is handed out."""
    try:
        windows = _windows(parts, shards, reader.files, reading)
        if reading.batch_size is None:
            yield from _samples(windows, shards, reader, cursor)
        else:
            batches = _batches(windows, shards, reader, cursor, reading.batch_size)
            yield from recorded_batches(batches)
    finally:
        shards.close()


def _windows(
    parts: Sequence[Part], shards: ShardSource, files: DatasetFiles, reading: Reading
) -> Iterator[Window]:
    """The samples of `parts`, a window each, located when it is reached, after its shards
    are opened."""
    position = 0
    for part in parts:
        chunks = part.chunks
        positions = range(position, position + len(chunks))
        shard_files = {c.shard: shards.get(p) for c, p in zip(chunks, positions, strict=True)}
        yield locate_window(
            files,
            part.samples(),
            shard_files,
            positions,
            image=reading.image,
            seed=reading.seed,
            epoch=reading.epoch,
            draws=reading.draws,
        )
        files.index.release()  # on to the next window: unmap the index pages read so far
        position += len(chunks)


def _samples(
    windows: Iterator[Window], shards: ShardSource, reader: WindowReader, cursor: Cursor
) -> Iterator[Sample]:
    for window in windows:
        for k in range(len(window)):
            sample = reader.sample(window, k)
            cursor.position += 1  # counted before the yield: state_dict() sees it handed out
            yield sample
        _release(shards, window)


def _batches(
    windows: Iterator[Window],
    shards: ShardSource,
    reader: WindowReader,
    cursor: Cursor,
    size: int,
) -> Iterator[Sample]:
    """Batches of `size` samples in reading order, across window boundaries (the last one
    may be short); a window's shards are released after the batch that holds its last
    samples is decoded."""
    spans: list[Span] = []
    filled = 0
    for window in windows:
        if not len(window):
            _release(shards, window)
        start = 0
        while start < len(window):
            stop = min(len(window), start + size - filled)
            spans.append(Span(window, start, stop))
            filled, start = filled + stop - start, stop
            if filled == size:
                yield _batch(reader, spans, shards, cursor)
                spans, filled = [], 0
    if spans:
        yield _batch(reader, spans, shards, cursor)


def _batch(reader: WindowReader, spans: list[Span], shards: ShardSource, cursor: Cursor) -> Sample:
    batch = reader.batch(spans)
    for span in spans:
        if span.stop == len(span.window):
            _release(shards, span.window)
    cursor.position += sum(span.stop - span.start for span in spans)  # before the yield
    return batch


def _release(shards: ShardSource, window: Window) -> None:
    """Close the shards of `window` (read to its end)."""
    for position in window.positions:
        shards.release(position)
