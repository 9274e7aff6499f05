"""`verify_dataset`: check a dataset's files against each other and against their checksums.

Every check runs and every problem is collected (up to a limit), so one report shows all that
is wrong: manifest and index headers, file sizes and SHA-256s, each shard's DALI index against
the binary index, each payload's CRC-32 and bounds, each `cls` against its label, and
optionally a strict decode of every JPEG.
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import simplejpeg
from fastpack.formats import DatasetFiles, FastpackError, Index, file_sha256, read_wds_index
from tqdm import tqdm

MAX_PROBLEMS = 1000
_CHUNK = 1 << 20


@dataclass(kw_only=True)
class VerifyReport:
    """The outcome of `verify_dataset`: `ok` when no problem was found."""

    path: Path
    problems: list[str] = field(default_factory=list)
    problems_omitted: int = 0
    samples_checked: int = 0
    shards_checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.problems_omitted

    def add(self, problem: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        else:
            self.problems_omitted += 1

    def add_error(self, error: BaseException) -> None:
        self.add(f"{type(error).__name__}: {error}")

    def format(self) -> str:
        """A human-readable summary, one line per problem."""
        verdict = "OK" if self.ok else f"{len(self.problems) + self.problems_omitted} problem(s)"
        lines = [
            f"{self.path}: {verdict}; {self.shards_checked} shard(s), "
            f"{self.samples_checked} sample(s) checked"
        ]
        lines += [f"  - {p}" for p in self.problems]
        if self.problems_omitted:
            lines.append(f"  ... and {self.problems_omitted} more")
        return "\n".join(lines)


def verify_dataset(
    path: str | os.PathLike[str], *, decode: bool = False, progress: bool = False
) -> VerifyReport:
    """Check the dataset at `path`; `decode=True` also decodes every JPEG (strict)."""
    report = VerifyReport(path=Path(path))
    try:
        files = DatasetFiles(path)
    except FastpackError as e:
        report.add_error(e)
        return report
    _check_file(report, files.index.path, files.manifest.index.bytes, files.manifest.index.sha256)
    ordered = _check_shard_column(report, files)
    shards: Iterable[int] = range(len(files.manifest.shards))
    if progress:
        shards = tqdm(shards, desc="verify", unit="shard")
    column = files.index.shard
    for shard in shards:
        if ordered:
            rows = np.arange(*np.searchsorted(column, [shard, shard + 1]))
        else:
            rows = np.flatnonzero(column == shard)
        _ShardCheck(report, files, shard, rows, decode).run()
    return report


def _check_file(report: VerifyReport, path: Path, size: int, sha256: str) -> bool:
    """Size and SHA-256 of `path` against the manifest; False if it is missing."""
    if not path.is_file():
        report.add(f"{path}: file not found")
        return False
    actual = path.stat().st_size
    if actual != size:
        report.add(f"{path}: {actual} bytes, the manifest records {size}")
    elif (digest := file_sha256(path)) != sha256:
        report.add(f"{path}: sha256 {digest}, the manifest records {sha256}")
    return True


def _check_shard_column(report: VerifyReport, files: DatasetFiles) -> bool:
    """The index's shard numbers: non-decreasing (returned), with each shard's count as in the
    manifest."""
    column: npt.NDArray[np.uint32] = files.index.shard  # type: ignore[assignment]
    ordered = not (len(column) > 1 and np.any(column[1:] < column[:-1]))
    if not ordered:
        report.add(f"{files.index.path}: the 'shard' column is not non-decreasing")
    shards = files.manifest.shards
    counts = np.bincount(column, minlength=len(shards))
    if len(counts) > len(shards):
        report.add(
            f"{files.index.path}: samples name shards up to {len(counts) - 1}, "
            f"the manifest lists {len(shards)}"
        )
    for k, info in enumerate(shards):
        if counts[k] != info.samples:
            report.add(
                f"{files.index.path}: {counts[k]} samples in shard {k}, "
                f"the manifest records {info.samples}"
            )
    return ordered


class _ShardCheck:
    """All checks of one shard and its samples."""

    def __init__(
        self,
        report: VerifyReport,
        files: DatasetFiles,
        shard: int,
        rows: npt.NDArray[np.intp],
        decode: bool,
    ) -> None:
        self.report, self.files, self.shard, self.decode = report, files, shard, decode
        self.index: Index = files.index
        self.path = files.shard_path(shard)
        self.rows = rows

    def run(self) -> None:
        info = self.files.manifest.shards[self.shard]
        if not _check_file(self.report, self.path, info.bytes, info.sha256):
            return
        self.report.shards_checked += 1
        self._check_wds_index()
        size = self.path.stat().st_size
        if size == 0:
            return
        with self.path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            view = memoryview(m)
            try:
                for i in self.rows.tolist():
                    self._check_sample(view, int(i))
                    self.report.samples_checked += 1
            finally:
                view.release()

    def _check_wds_index(self) -> None:
        path = self.files.shard_index_path(self.shard)
        try:
            samples = read_wds_index(path)
        except (FastpackError, OSError, UnicodeDecodeError) as e:
            self.report.add_error(e)
            return
        if len(samples) != len(self.rows):
            self.report.add(
                f"{path}: {len(samples)} samples, the index puts {len(self.rows)} in shard "
                f"{self.shard}"
            )
        fields = self.files.manifest.fields
        for i, members in zip(self.rows.tolist(), samples, strict=False):
            key = self.index.key(i)
            found = [(m.name, m.data_offset, m.size) for m in members]
            expected = [
                (f"{key}.{f}", int(self.index.offsets(f)[i]), int(self.index.sizes(f)[i]))
                for f in fields
            ]
            if found != expected:
                self.report.add(f"{path}: sample {i} lists {found}, the index has {expected}")

    def _check_sample(self, view: memoryview, i: int) -> None:
        for f in self.files.manifest.fields:
            offset, size = int(self.index.offsets(f)[i]), int(self.index.sizes(f)[i])
            where = f"{self.path}: sample {i} (key {self.index.key(i)}) field {f!r}"
            if offset + size > len(view):
                self.report.add(
                    f"{where}: bytes [{offset}, {offset + size}) past the shard's end "
                    f"({len(view)} bytes)"
                )
                continue
            data = view[offset : offset + size]
            crc, expected = zlib.crc32(data), int(self.index.crc32(f)[i])
            if crc != expected:
                self.report.add(f"{where}: crc32 {crc:08x}, the index records {expected:08x}")
            elif f == "cls" and bytes(data) != str(int(self.index.label[i])).encode():
                self.report.add(f"{where}: holds {bytes(data)!r}, label is {self.index.label[i]}")
            elif f == "jpg" and self.decode:
                self._check_decode(where, data)

    def _check_decode(self, where: str, data: memoryview) -> None:
        try:
            simplejpeg.decode_jpeg(data, colorspace="RGB", strict=True)
        except ValueError as e:
            self.report.add(f"{where}: does not decode ({e})")
