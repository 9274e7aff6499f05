"""`verify_remote`: the checks of `verify_dataset` on a dataset at a URL, its shards streamed.

The manifest and the binary index are downloaded into a temporary directory (`fastpack-verify-*`
under the system's temporary directory, deleted on return), where the index is memory-mapped; the
manifest is parsed once, from the bytes read.
Each shard is read once, front to back, in ranged reads of `chunk_bytes`: its SHA-256 is
computed as it streams and each payload is checked as soon as its bytes have arrived. No shard
is written to disk, and a shard being checked holds about one chunk plus one payload in memory
(a payload may straddle chunks; a record shard's records are found in windows of at least
one chunk, or one record). Each shard's DALI index, each zstd dictionary, the rejects file and
each view beside the dataset (small) are read whole. Problems name the URLs; a missing or
unreadable object is a problem in the report, not an exception.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    VIEWS_DIR,
    DatasetFiles,
    DatasetNotFoundError,
    FastpackError,
    Manifest,
    TruncatedFileError,
)
from fastpack.formats.checksum import crc32c_extend
from fastpack.formats.layout import version_rejects_name
from fastpack.formats.manifest import manifest_from_text
from fastpack.formats.shard_root import is_url, resolve_shard_root
from fastpack.storage import Location, RetryPolicy
from tqdm import tqdm

from ..remote import read_manifest_bytes
from .local import (
    Names,
    VerifyReport,
    check_shard_column,
    check_views,
    dali_index_problems,
    manifest_problems,
    shard_rows,
)
from .members import (
    MemberChecks,
    Rows,
    absent_problems,
    bounds_problem,
    member_checks,
    shard_payloads,
)
from .records import Record, SampleRecords, count_problem, record_index_problems, scan_window
from .side_files import rejects_problems
from .versions import check_remote_versions
from .views import file_view_name

DEFAULT_CHUNK_BYTES = 8 * 2**20


def verify_remote(  # noqa: PLR0913 -- public signature
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    decode: bool = False,
    progress: bool = False,
    retry: RetryPolicy | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> VerifyReport:
    """Check the dataset at `url` as `verify_dataset` checks a local one, streaming each shard
    in ranged reads of `chunk_bytes` (see the module's docstring). `decode=True` also decodes
    every member (JPEGs strictly); `progress=True` shows the shard bytes read; every read goes
    through `retry` (default `RetryPolicy()`)."""
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes={chunk_bytes}: must be at least 1")
    location = Location(url, storage_options, retry)
    report = VerifyReport(path=url)
    with tempfile.TemporaryDirectory(prefix="fastpack-verify-") as tmp:
        opened = _open_index(report, location, Path(tmp), chunk_bytes)
        if opened is None:
            return report
        files, text = opened
        index_url = location.url_of(files.manifest.index.name)
        names = Names(location.url_of(MANIFEST_NAME), index_url)
        for problem in manifest_problems(files.manifest, files.index, text, names):
            report.add(problem)
        earlier = check_remote_versions(location, files.manifest, text, chunk_bytes)
        for problem in earlier.problems:
            report.add(problem)
        ordered = check_shard_column(report, files.index, files.manifest, index_url)
        for problem in _rejects_problems(location, files.manifest):
            report.add(problem)
        _check_views(report, location, files.manifest, earlier.manifests.values())
        checks, problems = member_checks(
            files.manifest,
            location.read_bytes,
            location.url_of,
            decode,
            records=files.records,
            adopted=files.manifest.adopted,
        )
        shards = _shard_location(location, files.manifest)
        for problem in problems:
            report.add(problem)
        total = sum(s.bytes for s in files.manifest.shards)
        bar = tqdm(total=total, desc="verify", unit="B", unit_scale=True, disable=not progress)
        with bar:
            for shard in range(len(files.manifest.shards)):
                rows = shard_rows(files.index, shard, ordered)
                _RemoteShard(location, files, shard, rows, bar.update, shards=shards).check(
                    report, checks, chunk_bytes
                )
    return report


def _shard_location(location: Location, manifest: Manifest) -> Location:
    """Where the shards lie: the dataset's location, or the shard root of adopted shards."""
    where = resolve_shard_root(location.url, manifest.shard_root)
    if where == location.url:
        return location
    if not is_url(where):
        raise DatasetNotFoundError(
            f"{location.url_of(MANIFEST_NAME)}: its shards lie at {where}, not at a URL"
        )
    return Location(where, location.storage_options, location.retry)


def _rejects_problems(location: Location, manifest: Manifest) -> list[str]:
    name = version_rejects_name(manifest.dataset_version)  # the latest version's
    url = location.url_of(name)
    try:
        data = location.read_bytes(name) if location.size(name) is not None else None
    except (FastpackError, OSError) as e:
        return [f"{url}: unreadable ({type(e).__name__}: {e})"]
    return rejects_problems(url, data, manifest)


def _check_views(
    report: VerifyReport, location: Location, manifest: Manifest, earlier: Iterable[Manifest] = ()
) -> None:
    """Each view file beside the dataset (`views/*.fpview` under its URL), made on the version
    of `manifest` or on one of the `earlier` versions."""
    try:
        files = sorted(name for name, _ in location.walk(VIEWS_DIR))
    except (FastpackError, OSError, ValueError):
        return  # no views folder
    views = []
    for file in files:
        folder, _, base = file.rpartition("/")
        name = file_view_name(base)
        if name is not None and folder == VIEWS_DIR:
            views.append((name, location.url_of(file), partial(location.read_bytes, file)))
    check_views(report, manifest, views, earlier=earlier)


def _open_index(
    report: VerifyReport, location: Location, tmp: Path, chunk_bytes: int
) -> tuple[DatasetFiles, bytes] | None:
    """The dataset, its manifest and index downloaded into `tmp`, and the manifest's bytes; None
    (and the problem) when either is missing or unreadable. The index's size and SHA-256 are checked
    too."""
    index_url = location.url_of(INDEX_NAME)
    try:
        text = read_manifest_bytes(location, location.retry)
        manifest = manifest_from_text(text, location.url_of(MANIFEST_NAME))
        index_name = manifest.index.name  # `index.fpx`, or a later version's
        index_url = location.url_of(index_name)
        (tmp / MANIFEST_NAME).write_bytes(text)  # the dataset's files side by side, as on disk
        (tmp / index_name).parent.mkdir(parents=True, exist_ok=True)
        size = location.size(index_name)
        if size is None:
            report.add(f"{index_url}: not found")
            return None
        digest = hashlib.sha256()
        with (tmp / index_name).open("wb") as f:
            for chunk in location.iter_chunks(index_name, size, chunk_bytes):
                digest.update(chunk)
                f.write(chunk)
        files = DatasetFiles(tmp, manifest)
    except (FastpackError, OSError) as e:
        report.add(f"{type(e).__name__}: {e}".replace(str(tmp), location.url))
        return None
    actual = (tmp / manifest.index.name).stat().st_size
    if actual != manifest.index.bytes:
        report.add(f"{index_url}: {actual} bytes, the manifest records {manifest.index.bytes}")
    elif digest.hexdigest() != manifest.index.sha256:
        report.add(
            f"{index_url}: sha256 {digest.hexdigest()}, the manifest records "
            f"{manifest.index.sha256}"
        )
    return files, text


class _Stream:
    """Object `name` of `size` bytes read once, front to back, in ranged reads of `chunk_bytes`,
    each chunk handed to `seen`. `take(start, end)` returns bytes `[start, end)`; `start` must
    not decrease from call to call, and only the bytes from the last `start` on are kept."""

    def __init__(
        self,
        location: Location,
        name: str,
        size: int,
        chunk_bytes: int,
        seen: Callable[[bytes], None],
    ) -> None:
        self._location, self._name, self._size = location, name, size
        self._chunk_bytes, self._seen = chunk_bytes, seen
        self._buf = b""  # bytes [self._pos - len(self._buf), self._pos) of the object
        self._pos = 0

    def _read(self) -> bytes:
        want = min(self._chunk_bytes, self._size - self._pos)
        chunk = self._location.read_range(self._name, self._pos, self._pos + want)
        if len(chunk) != want:
            raise TruncatedFileError(
                f"{self._location.url_of(self._name)}: bytes [{self._pos}, {self._pos + want}) "
                f"came back as {len(chunk)} bytes; the object had {self._size} bytes when the "
                "check began"
            )
        self._seen(chunk)
        return chunk

    def take(self, start: int, end: int) -> memoryview:
        """Bytes `[start, end)`, reading on as far as `end`."""
        while self._pos < end:
            chunk = self._read()
            first = self._pos - len(self._buf)
            kept = self._buf[start - first :] if start > first else self._buf
            self._buf = kept + chunk if kept else chunk
            self._pos += len(chunk)
        first = self._pos - len(self._buf)
        return memoryview(self._buf)[start - first : end - first]

    def finish(self) -> None:
        """Read the rest of the object (so that `seen` gets every byte); keep nothing."""
        self._buf = b""
        while self._pos < self._size:
            self._pos += len(self._read())


class _RecordWalk:
    """The records of a remote record shard, found window by window as the shard streams
    (records.py's checks): each window is at least `chunk_bytes`, more for a longer record."""

    def __init__(self, url: str, files: DatasetFiles, rows: Rows, size: int) -> None:
        self.url, self.size = url, size
        self.samples = SampleRecords(url, files.index, files.manifest.schema, rows)
        self.records: list[Record] = []
        self.problems: list[str] = []  # the records' own problems (CRCs, framing)
        self.sample_problems: list[str] = []  # their samples' (records.SampleRecords)
        self.pos = 0  # where the next record starts
        self.going = size > 0  # False once the whole shard is scanned, or a record is unsound
        self.complete = size == 0  # the scan reached the end of the shard

    def step(self, stream: _Stream, chunk_bytes: int) -> None:
        """Scan the next window: its records, checked against their samples."""
        want = chunk_bytes
        while True:
            end = min(self.size, self.pos + want)
            window = bytes(stream.take(self.pos, end))
            scan = scan_window(self.url, window, self.pos, end == self.size, len(self.records))
            if scan.records or not scan.going or end == self.size:
                break
            want *= 2  # a record longer than the window
        self.problems += scan.problems
        for record in scan.records:
            self.sample_problems += self.samples.problems(record, window, self.pos)
        self.records += scan.records
        self.pos = scan.stop
        self.complete = scan.going and self.pos == self.size
        self.going = scan.going and not self.complete


class _RemoteShard:
    """All checks of one shard at a URL: size and SHA-256, DALI index, each payload, and in a
    record dataset its records."""

    def __init__(  # noqa: PLR0913 -- keyword inputs
        self,
        location: Location,
        files: DatasetFiles,
        shard: int,
        rows: Rows,
        progress: Callable[[int], object],
        *,
        shards: Location | None = None,
    ) -> None:
        self.location, self.files, self.shard, self.rows = location, files, shard, rows
        self.shards = shards or location  # where the shard lies (adopted: the shard root)
        self.info = files.manifest.shards[shard]
        self.url = self.shards.url_of(self.info.name)
        self.progress = progress
        self.idx_lines: list[tuple[int, int]] | None = None  # a record shard's DALI index

    def check(self, report: VerifyReport, checks: MemberChecks, chunk_bytes: int) -> None:
        """Add this shard's problems to `report`: the object's own first, as `verify_dataset`
        orders them (its SHA-256 is known only once it has been read)."""
        try:
            size = self.shards.size(self.info.name)
        except (FastpackError, OSError) as e:
            report.add_error(e)
            return
        if size is None:
            report.add(f"{self.url}: not found")
            return
        report.shards_checked += 1
        name = self.info.index_name
        idx_problems, self.idx_lines = dali_index_problems(
            self.location.url_of(name),
            lambda: self.location.read_bytes(name),
            self.files,
            self.shard,
            self.rows,
        )
        index, schema = self.files.index, self.files.manifest.schema
        absent = absent_problems(self.url, index, schema, self.rows)
        digest, crc = hashlib.sha256(), [0]

        def seen(chunk: bytes) -> None:
            digest.update(chunk)
            if self.info.crc32c is not None:
                crc[0] = crc32c_extend(crc[0], chunk)
            self.progress(len(chunk))

        problems, error = self._payload_problems(size, checks, chunk_bytes, seen)
        if size != self.info.bytes:
            report.add(f"{self.url}: {size} bytes, the manifest records {self.info.bytes}")
        elif error is None and digest.hexdigest() != self.info.sha256:
            report.add(
                f"{self.url}: sha256 {digest.hexdigest()}, the manifest records {self.info.sha256}"
            )
        elif error is None and self.info.crc32c is not None and crc[0] != self.info.crc32c:
            report.add(
                f"{self.url}: crc32c {crc[0]}, the manifest records {self.info.crc32c} (its "
                "sha256 matches)"
            )
        for problem in [*idx_problems, *absent, *problems]:
            report.add(problem)
        if error is not None:
            report.add(error)
        elif size:
            report.samples_checked += len(self.rows)

    def _payload_problems(
        self, size: int, checks: MemberChecks, chunk_bytes: int, seen: Callable[[bytes], None]
    ) -> tuple[list[str], str | None]:
        """Stream the shard's `size` bytes through `seen`, checking its records (a record
        shard) and each payload on the way: the problems in `verify_dataset`'s order, and the
        error that stopped the reading, if one did."""
        # adopted record shards: records the index does not use (rejected) are not walked
        walk = (
            _RecordWalk(self.url, self.files, self.rows, size)
            if self.files.records and not self.files.manifest.adopted
            else None
        )
        if size == 0:
            return self._record_problems(walk), None
        index = self.files.index
        payloads = shard_payloads(index, self.files.manifest.fields, self.rows)
        # in offset order, the next one last
        order = sorted(range(len(payloads)), key=lambda k: payloads[k].offset, reverse=True)
        stream = _Stream(self.shards, self.info.name, size, chunk_bytes, seen)
        found: dict[int, str] = {}

        def check_before(limit: int | None) -> None:
            """Check the payloads (in offset order) that start before `limit` (None: all)."""
            while order and (limit is None or payloads[order[-1]].offset < limit):
                k = order.pop()
                p = payloads[k]
                problem = bounds_problem(self.url, index, p, size) or checks.problem(
                    self.url, index, p, stream.take(p.offset, p.end)
                )
                if problem is not None:
                    found[k] = problem

        try:
            while walk is not None and walk.going:
                walk.step(stream, chunk_bytes)
                check_before(walk.pos)
            check_before(None)
            stream.finish()
        except (FastpackError, OSError) as e:
            problems = [*self._record_problems(walk), *(found[k] for k in sorted(found))]
            return problems, f"{type(e).__name__}: {e}"
        return [*self._record_problems(walk), *(found[k] for k in sorted(found))], None

    def _record_problems(self, walk: _RecordWalk | None) -> list[str]:
        """What the records found say, in `verify_dataset`'s order: their own problems, their
        samples', their count, the DALI index."""
        if walk is None:
            return []
        problems = [*walk.problems, *walk.sample_problems]
        if walk.complete and (
            found := count_problem(self.url, len(walk.records), self.rows, self.shard)
        ):
            problems.append(found)
        if self.idx_lines is not None:
            url = self.location.url_of(self.info.index_name)
            problems += record_index_problems(url, self.idx_lines, walk.records, walk.complete)
        return problems
