"""`IndexRows`: the index of a dataset at a URL, cached on the node one shard's rows at a time.

The cached index (`index.fpx`, or a later dataset version's `versions/NNNNNN/index.fpx`: the
manifest's `index.name`) is a sparse file of the index's full size and layout (formats/SPEC.md
section 3), so that `Index` and `DatasetFiles` open and read it as they read any index. Making an
`IndexRows` fetches only what opening reads: the header and section table (one ranged GET) and
the first and last entries of the `*.offsets` sections. `ensure(shard)` fetches the slice that
holds the shard's rows of every section a reader reads (not the sources or the CRCs, which stay
zeros), in ranged GETs in parallel (the keys' bytes once their offsets are known), checks it,
writes it at its place and then marks the shard present in the sidecar `index.fpx.rows` (one byte
per shard). Samples are stored shard after shard, so a shard's rows are one contiguous slice of
each section. An index of at most `WHOLE_INDEX_BYTES` is fetched whole instead.

The streams of a node share both files: rows go to disjoint byte ranges (or the same bytes
again), a marker is written after its rows, and a shard is fetched under a lock, so that no
stream fetches rows another has marked present. An index that is whole in the cache (no sidecar:
a whole download) is used as it is.

Rows are checked, not hashed: the manifest's SHA-256 covers the whole index, which is checked
only when it is fetched whole.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import (
    MANIFEST_NAME,
    CorruptIndexError,
    FastpackError,
    Index,
    Manifest,
    TruncatedFileError,
)
from fastpack.formats.index_layout import HEADER_SIZE as INDEX_HEADER_SIZE
from fastpack.formats.index_layout import Section, section_table, table_size
from fastpack.storage import Expected, Location

from ._row_checks import ShardRows, check_rows
from ._shard_marks import ShardMarks, create_marks, write_at

MARKS_SUFFIX = ".rows"
HEAD_BYTES = 4096  # the first GET: the header and the table of up to 83 sections
THREADS = 8  # ranged GETs at once for one shard's rows
AHEAD_THREADS = 2  # shards whose rows `fetch_ahead` fetches at once
_STRINGS = ("key", "source")  # the string tables: `<name>.offsets` into `<name>.blob`
_ROW_STRINGS = ("key",)  # the string tables a reader reads (keys name samples in errors)
# Sections a reader never reads, left unfetched (zeros) in the rows of a shard: sources, and
# the members' CRCs (which `verify` checks against a whole index).
_UNREAD = ("source.offsets", "source.blob")
_UNREAD_SUFFIX = ".crc32"
# An index this small is fetched whole, checked against the manifest's SHA-256: one parallel
# download costs less than the requests of a few shards' rows (8 or more each).
WHOLE_INDEX_BYTES = 16 * 2**20

Spans = dict[str, tuple[int, int]]


class IndexRows:
    """The index of the dataset at `location` (described by `manifest`) in the cache directory
    `root`; `ensure(shard)` before reading the rows of `shard`. An index of at most
    `WHOLE_INDEX_BYTES` is fetched whole at once."""

    def __init__(
        self, location: Location, manifest: Manifest, root: Path, *, threads: int = THREADS
    ) -> None:
        self._location, self._manifest, self._threads = location, manifest, max(1, threads)
        self._name = name = manifest.index.name  # `index.fpx`, or a later version's
        self.path = root / name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.marks_path = root / (name + MARKS_SUFFIX)
        self.url = location.url_of(name)
        counts = [s.samples for s in manifest.shards]
        self._starts: list[int] = [0, *np.cumsum(counts, dtype=np.int64).tolist()]
        size = manifest.index.bytes
        if size <= WHOLE_INDEX_BYTES and not self.marks_path.exists() and _size(self.path) != size:
            location.download(name, self.path, Expected(size=size, sha256=manifest.index.sha256))
        self.complete = _size(self.path) == size and not self.marks_path.exists()
        self._sections: dict[str, Section] = {}
        self._absent_allowed = False
        self._present: set[int] = set()  # shards this process knows to be present
        self._marks: ShardMarks | None = None
        self._ahead: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool) of fetch_ahead
        self._gets: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool) of ranged GETs
        self._lock = threading.Lock()
        if not self.complete:
            self._prepare()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_marks"] = state["_ahead"] = state["_gets"] = state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- the sparse file ------------------------------------------------------------------------

    def _prepare(self) -> None:
        """Create the sidecar, then (unless another stream did) the sparse index with what
        opening reads; check it by opening it."""
        create_marks(self.marks_path, len(self._manifest.shards))
        if _size(self.path) is None:
            head = self._fetch_head()
            self._create(head, section_table(head))
        size, found = self._manifest.index.bytes, _size(self.path)
        if found != size:
            raise CorruptIndexError(
                f"{self.path}: {found} bytes, {self._location.url_of(MANIFEST_NAME)} records "
                f"{size} for {self.url}; remove the cache directory {self.path.parent}"
            )
        self._absent_allowed = self._open_checked().version > 1
        with self.path.open("rb") as f:  # the table, checked by opening
            header = f.read(INDEX_HEADER_SIZE)
            self._sections = section_table(header + f.read(table_size(header) - INDEX_HEADER_SIZE))

    def _fetch_head(self) -> bytes:
        """The header and section table (and whatever else the first GET brings)."""
        size = self._manifest.index.bytes
        head = self._location.read_range(self._name, 0, min(size, HEAD_BYTES))
        needed = table_size(head)
        if len(head) < needed <= size:  # a table past the end is for opening to report
            head += self._location.read_range(self._name, len(head), needed)
        return head

    def _create(self, head: bytes, sections: Mapping[str, Section]) -> None:
        """Write the sparse index beside its place, then link it there unless another stream of
        the node has been first (a link never replaces a file)."""
        size = self._manifest.index.bytes
        ends: Spans = {}
        for name in (f"{s}.offsets" for s in _STRINGS):
            section = sections.get(name)
            if section is not None and section.elements:  # else opening reports what is wrong
                ends[f"first entry of {name!r}"] = section.span(0, 1)
                last = section.elements - 1
                ends[f"last entry of {name!r}"] = section.span(last, last + 1)
        ends = {k: (a, b) for k, (a, b) in ends.items() if b <= size}
        data = self._get(ends, "opening")
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.ftruncate(fd, size)
                write_at(fd, head, 0)
                for name, (start, _) in ends.items():
                    write_at(fd, data[name], start)
            finally:
                os.close(fd)
            with contextlib.suppress(FileExistsError):  # another stream made it, same bytes
                os.link(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def _open_checked(self) -> Index:
        """The cached index opened (which checks its header, table and offsets' ends against
        SPEC), and its counts against the manifest's."""
        try:
            index = Index(self.path, self._manifest.schema.names)
        except FastpackError as e:
            raise type(e)(f"{self.url}: {e}") from e
        m = self._manifest
        if (index.num_samples, index.num_shards) != (m.num_samples, len(m.shards)):
            raise CorruptIndexError(
                f"{self.url}: {index.num_samples} samples in {index.num_shards} shards, but "
                f"{self._location.url_of(MANIFEST_NAME)} lists {m.num_samples} in {len(m.shards)}"
            )
        return index

    # -- rows -----------------------------------------------------------------------------------

    def ensure(self, shard: int) -> None:
        """Make the rows of `shard` present in the cached index (at once if they are)."""
        if self.complete or shard in self._present:
            return
        marks = self._process_marks()
        if not marks.present(shard):
            with marks.exclusive(shard):
                if not marks.present(shard):  # another stream may have fetched it meanwhile
                    self._fetch_rows(shard, marks)
                    marks.mark(shard)
        self._present.add(shard)

    def fetch_ahead(self, shards: Iterable[int]) -> None:
        """Start fetching the rows of `shards` in the background, beside the shards' own
        downloads; an `ensure` waits for a fetch of its shard in flight."""
        if self.complete:
            return
        with self._lock:
            if self._ahead is None or self._ahead[0] != os.getpid():
                pool = ThreadPoolExecutor(AHEAD_THREADS, thread_name_prefix="fastpack-rows")
                self._ahead = (os.getpid(), pool)
            pool = self._ahead[1]
        for shard in shards:
            if shard not in self._present:
                pool.submit(self._ensure_quietly, shard)

    def _ensure_quietly(self, shard: int) -> None:
        # A failure is left to the `ensure` that needs the rows: it fetches them again, and raises.
        with contextlib.suppress(Exception):
            self.ensure(shard)

    def _process_marks(self) -> ShardMarks:
        with self._lock:
            if self._marks is None or self._marks.pid != os.getpid():
                self._marks = ShardMarks(self.path, self.marks_path)
            return self._marks

    def _fetch_rows(self, shard: int, marks: ShardMarks) -> None:
        """Fetch, check and write the rows of `shard` that a reader reads: every section but the
        blobs, the sources and the CRCs, then the keys' bytes that the fetched offsets point at."""
        first, stop = self._starts[shard], self._starts[shard + 1]
        spans: Spans = {}
        for name, section in self._sections.items():
            if not name.endswith((".blob", _UNREAD_SUFFIX)) and name not in _UNREAD:
                end = stop + 1 if name.endswith(".offsets") else stop
                spans[name] = section.span(first, end)
        data = self._get(spans, f"shard {shard}")
        rows = {n: np.frombuffer(data[n], self._sections[n].dtype) for n in spans}
        blobs = {s: self._sections[f"{s}.blob"] for s in _ROW_STRINGS}
        check_rows(
            ShardRows(url=self.url, shard=shard, first=first, rows=rows),
            shard_bytes=self._manifest.shards[shard].bytes,
            blob_sizes={s: b.elements for s, b in blobs.items()},
            absent_allowed=self._absent_allowed,
        )
        blob_spans = {f"{s}.blob": b.span(*_ends(rows[f"{s}.offsets"])) for s, b in blobs.items()}
        data.update(self._get(blob_spans, f"shard {shard}"))
        for name, (start, _) in (spans | blob_spans).items():
            marks.write(data[name], start)

    def _get(self, spans: Spans, context: str) -> dict[str, bytes]:
        """Bytes `[start, end)` of the index for each name, fetched in parallel; `context` says
        what for in the error of a short read."""

        def get(name: str) -> bytes:
            start, end = spans[name]
            if end <= start:
                return b""
            data = self._location.read_range(self._name, start, end)
            if len(data) != end - start:
                raise TruncatedFileError(
                    f"{self.url}: {context}: bytes [{start}, {end}) of {_what(name)} came back as "
                    f"{len(data)} bytes; the manifest records {self._manifest.index.bytes} bytes"
                )
            return data

        names = list(spans)
        if len(names) <= 1:
            return {n: get(n) for n in names}
        return dict(zip(names, self._get_pool().map(get, names), strict=True))

    def _get_pool(self) -> ThreadPoolExecutor:
        """This process's threads for ranged GETs, made once (a forked process makes its own)."""
        with self._lock:
            if self._gets is None or self._gets[0] != os.getpid():
                pool = ThreadPoolExecutor(self._threads, thread_name_prefix="fastpack-index")
                self._gets = (os.getpid(), pool)
            return self._gets[1]

    def close(self) -> None:
        """Stop the fetches ahead not yet started and let go of this process's descriptors of
        the cached index (closed once no fetch in flight holds them; `ensure` opens them again)."""
        with self._lock:
            if self._ahead is not None and self._ahead[0] == os.getpid():
                self._ahead[1].shutdown(wait=False, cancel_futures=True)
            self._marks = self._ahead = self._gets = None  # GETs in flight keep their pool


def _what(name: str) -> str:
    """A span's name as errors say it: a section's slice, or the entry it is."""
    return name if " " in name else f"section {name!r}"


def _ends(offsets: npt.NDArray[np.generic]) -> tuple[int, int]:
    return int(offsets[0]), int(offsets[-1])


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None
