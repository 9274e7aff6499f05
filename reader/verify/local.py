"""`verify_dataset`: check a dataset's files against each other and against their checksums.

Every check runs and every problem is collected (up to a limit), so one report shows all that
is wrong, and every byte a reader trusts is covered (formats/SPEC.md section 9): the manifest's
own bytes and fields (manifest_checks.py: its SHA-256 and canonical text, shard names, keys
against `key_width`, labels against `classes`, stats), manifest and index headers, the size and
SHA-256 of every file the manifest lists (index, shards and their CRC-32C, DALI indexes,
dictionaries, rejects), each shard's DALI index against the binary index and against the text a
writer writes (side_files.py), the rejects file line by line, each view beside the dataset
(views.py), each present member's CRC-32 and bounds, each absent member's marker (only optional
fields may lack a member), the label field's members against the index's labels, every zstd
frame decompressed, and optionally (`decode`) every member decoded as its field's type says; in
a record dataset also each shard's records (records.py: CRCs, tiling, one record per sample
holding its fields, the DALI index). A dataset over adopted shards (`fastpack index`) is
checked without section 4's layout rules (adopted.py). These checks are shared with
`verify_remote`, which streams the shards of a dataset at a URL.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from fastpack.formats import (
    MANIFEST_NAME,
    VIEWS_DIR,
    DatasetFiles,
    FastpackError,
    Index,
    Manifest,
)
from fastpack.formats.checksum import file_sha256_crc32c
from fastpack.formats.layout import version_rejects_name
from fastpack.formats.manifest import manifest_from_text
from fastpack.formats.tar_shard import MemberLocation
from fastpack.formats.tfrecord import parse_record_index
from fastpack.formats.wds_index import parse_wds_index
from tqdm import tqdm

from . import adopted
from .manifest_checks import (
    key_problems,
    label_problems,
    manifest_text_problems,
    name_problems,
    stats_problems,
)
from .members import (
    MemberChecks,
    Rows,
    absent_problems,
    bounds_problem,
    key_of,
    member_checks,
    present,
    shard_payloads,
)
from .records import SampleRecords, count_problem, record_index_problems, scan_window
from .side_files import checksum_problem, record_text_problem, rejects_problems, wds_text_problem
from .versions import check_versions
from .views import file_view_name, view_problems

MAX_PROBLEMS = 1000


@dataclass(kw_only=True)
class VerifyReport:
    """The outcome of `verify_dataset` or `verify_remote`: `ok` when no problem was found.
    `path` is the dataset's directory, or its URL."""

    path: Path | str
    problems: list[str] = field(default_factory=list)
    problems_omitted: int = 0
    samples_checked: int = 0
    shards_checked: int = 0
    views_checked: int = 0

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
        counts = [f"{self.shards_checked} shard(s)", f"{self.samples_checked} sample(s)"]
        if self.views_checked:
            views = [f"{self.views_checked} view(s)"]
            counts = views if not (self.shards_checked or self.samples_checked) else counts + views
        lines = [f"{self.path}: {verdict}; {', '.join(counts)} checked"]
        lines += [f"  - {p}" for p in self.problems]
        if self.problems_omitted:
            lines.append(f"  ... and {self.problems_omitted} more")
        return "\n".join(lines)


def check_shard_column(
    report: VerifyReport, index: Index, manifest: Manifest, index_name: str
) -> bool:
    """The index's shard numbers: non-decreasing (returned), with each shard's count as in the
    manifest. `index_name` names the index in the problems."""
    column: npt.NDArray[np.uint32] = index.shard  # type: ignore[assignment]
    ordered = not (len(column) > 1 and np.any(column[1:] < column[:-1]))
    if not ordered:
        report.add(f"{index_name}: the 'shard' column is not non-decreasing")
    shards = manifest.shards
    highest = int(column.max()) if len(column) else -1
    if highest >= len(shards):
        report.add(
            f"{index_name}: samples name shards up to {highest}, the manifest lists {len(shards)}"
        )
        column = column[column < len(shards)]
    counts = np.bincount(column, minlength=len(shards))
    for k, info in enumerate(shards):
        if counts[k] != info.samples:
            report.add(
                f"{index_name}: {counts[k]} samples in shard {k}, "
                f"the manifest records {info.samples}"
            )
    return ordered


def shard_rows(index: Index, shard: int, ordered: bool) -> Rows:
    """The index rows of shard `shard`; `ordered` as `check_shard_column` returned it."""
    column = index.shard
    if ordered:
        return np.arange(*np.searchsorted(column, [shard, shard + 1]))
    return np.flatnonzero(column == shard)


def wds_index_problems(  # noqa: PLR0913 -- keyword inputs
    source: str,
    samples: Sequence[Sequence[MemberLocation]],
    index: Index,
    fields: Sequence[str],
    *,
    rows: Rows,
    shard: int,
) -> list[str]:
    """What a shard's DALI index (`samples`, read from `source`) says that the index does not."""
    problems = []
    if len(samples) != len(rows):
        problems.append(
            f"{source}: {len(samples)} samples, the index puts {len(rows)} in shard {shard}"
        )
    for i, members in zip(rows.tolist(), samples, strict=False):
        key = key_of(index, i)
        found = [(m.name, m.data_offset, m.size) for m in members]
        expected = [
            (f"{key}.{f}", int(index.offsets(f)[i]), int(index.sizes(f)[i]))
            for f in fields
            if present(index, f, i)
        ]
        if found != expected:
            problems.append(f"{source}: sample {i} lists {found}, the index has {expected}")
    return problems


@dataclass(frozen=True)
class Names:
    """How problems name the manifest and the index: paths, or URLs."""

    manifest: str
    index: str


def manifest_problems(manifest: Manifest, index: Index, text: bytes, names: Names) -> list[str]:
    """The manifest's own checks (manifest_checks.py): its bytes `text` (which `manifest` is
    parsed from), its shard names, and its keys, classes and stats against the index; `names`
    name the files in problems."""
    layout = (
        []
        if manifest.adopted
        else [
            *name_problems(manifest, names.manifest),
            *key_problems(index, manifest, names.index),
        ]
    )  # adopted shards follow none of section 4's layout rules (adopted.py)
    return [
        *manifest_text_problems(text, names.manifest, manifest),
        *layout,
        *label_problems(index, manifest, names.index),
        *stats_problems(index, manifest, names.manifest),
    ]


def verify_dataset(
    path: str | os.PathLike[str], *, decode: bool = False, progress: bool = False
) -> VerifyReport:
    """Check the dataset at `path`, its views beside it included; `decode=True` also decodes
    every member (JPEGs strictly)."""
    report = VerifyReport(path=Path(path))
    try:
        files, text = _open(Path(path))
    except (FastpackError, OSError) as e:
        report.add_error(e)
        return report
    names = Names(str(files.root / MANIFEST_NAME), str(files.index.path))
    for problem in manifest_problems(files.manifest, files.index, text, names):
        report.add(problem)
    earlier = check_versions(files.root, files.manifest, text)  # a dataset grown by appends
    for problem in earlier.problems:
        report.add(problem)
    _check_file(report, files.index.path, files.manifest.index.bytes, files.manifest.index.sha256)
    ordered = check_shard_column(report, files.index, files.manifest, str(files.index.path))
    _check_rejects(report, files.root / version_rejects_name(files.version), files.manifest)
    _check_views(report, files.root, files.manifest, earlier.manifests.values())
    checks, problems = member_checks(
        files.manifest,
        lambda name: (files.root / name).read_bytes(),
        lambda name: str(files.root / name),
        decode,
        records=files.records,
        adopted=files.manifest.adopted,
    )
    for problem in problems:
        report.add(problem)
    shards: Iterable[int] = range(len(files.manifest.shards))
    if progress:
        shards = tqdm(shards, desc="verify", unit="shard")
    for shard in shards:
        _check_shard(report, files, shard, shard_rows(files.index, shard, ordered), checks)
    return report


def _open(root: Path) -> tuple[DatasetFiles, bytes]:
    """The dataset at `root` and its manifest's bytes, read once for both."""
    path = root / MANIFEST_NAME
    try:
        text = path.read_bytes()
    except OSError:
        DatasetFiles(root)  # raises what a reader is told (no directory, no manifest)
        raise
    return DatasetFiles(root, manifest_from_text(text, str(path))), text


def _check_rejects(report: VerifyReport, path: Path, manifest: Manifest) -> None:
    """The rejects file, where there is one (side_files.py)."""
    try:
        data: bytes | None = path.read_bytes()
    except FileNotFoundError:
        data = None
    except OSError as e:
        report.add(f"{path}: unreadable ({type(e).__name__}: {e})")
        return
    for problem in rejects_problems(str(path), data, manifest):
        report.add(problem)


def _check_views(
    report: VerifyReport, root: Path, manifest: Manifest, earlier: Iterable[Manifest] = ()
) -> None:
    """Each view file beside the dataset (`views/*.fpview`), made on the version of `manifest`
    or on one of the `earlier` versions."""
    folder = root / VIEWS_DIR
    if not folder.is_dir():
        return
    views = (
        (name, str(path), path.read_bytes)
        for path in sorted(folder.iterdir())
        if (name := file_view_name(path.name)) is not None and path.is_file()
    )
    check_views(report, manifest, views, earlier=earlier)


def check_views(
    report: VerifyReport,
    manifest: Manifest,
    views: Iterable[tuple[str, str, Callable[[], bytes]]],
    *,
    earlier: Iterable[Manifest] = (),
) -> None:
    """The view files beside the dataset, each given as its view name, what names its file and
    a reader of its bytes; each made on the version of `manifest` or on one of `earlier`."""
    earlier = tuple(earlier)
    for name, where, read in views:
        try:
            data = read()
        except (FastpackError, OSError) as e:
            report.add(f"{where}: unreadable ({type(e).__name__}: {e})")
            continue
        for problem in view_problems(where, data, manifest, name, earlier):
            report.add(problem)
        report.views_checked += 1


def _check_file(
    report: VerifyReport, path: Path, size: int, sha256: str, crc32c: int | None = None
) -> bool:
    """Size and SHA-256 of `path` against the manifest, and its CRC-32C where the manifest
    records one (reported only where the SHA-256 matches); False if it is missing."""
    if not path.is_file():
        report.add(f"{path}: file not found")
        return False
    actual = path.stat().st_size
    if actual != size:
        report.add(f"{path}: {actual} bytes, the manifest records {size}")
        return True
    digest, crc = file_sha256_crc32c(path)
    if digest != sha256:
        report.add(f"{path}: sha256 {digest}, the manifest records {sha256}")
    elif crc32c is not None and crc != crc32c:
        report.add(f"{path}: crc32c {crc}, the manifest records {crc32c} (its sha256 matches)")
    return True


def _check_shard(
    report: VerifyReport, files: DatasetFiles, shard: int, rows: Rows, checks: MemberChecks
) -> None:
    """All checks of one shard file, its DALI index and its samples' members (and in a record
    dataset, its records: records.py)."""
    info, path = files.manifest.shards[shard], files.shard_path(shard)
    if not _check_file(report, path, info.bytes, info.sha256, info.crc32c):
        return
    report.shards_checked += 1
    idx_path = files.shard_index_path(shard)
    idx_problems, idx_lines = dali_index_problems(
        str(idx_path), idx_path.read_bytes, files, shard, rows
    )
    for line in idx_problems:
        report.add(line)
    name, index = str(path), files.index
    for line in absent_problems(name, index, files.manifest.schema, rows):
        report.add(line)
    size = path.stat().st_size
    if size == 0:
        if files.records and not files.manifest.adopted:
            _check_records(report, files, shard, rows, data=b"", idx_lines=idx_lines)
        return
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if files.records and files.manifest.adopted:
            for found in adopted.record_problems(
                name, m, index, files.manifest.schema, rows=rows, idx_lines=idx_lines
            ):
                report.add(found)
        elif files.records:
            _check_records(report, files, shard, rows, data=m, idx_lines=idx_lines)
        view = memoryview(m)
        try:
            for p in shard_payloads(index, files.manifest.fields, rows):
                problem = bounds_problem(name, index, p, size) or checks.problem(
                    name, index, p, view[p.offset : p.end]
                )
                if problem is not None:
                    report.add(problem)
            report.samples_checked += len(rows)
        finally:
            view.release()


def dali_index_problems(
    where: str, read: Callable[[], bytes], files: DatasetFiles, shard: int, rows: Rows
) -> tuple[list[str], list[tuple[int, int]] | None]:
    """Shard `shard`'s DALI index (its bytes as `read` gives them, `where` naming it): its size
    and SHA-256 where the manifest records them, a tar shard's wds2idx index against the index
    and its text; and a record shard's tfrecord2idx lines (their text checked), to be checked
    against its records (None for a tar shard, or an unreadable index)."""
    info, problems = files.manifest.shards[shard], []
    try:
        data = read()
        if info.index_bytes is not None and info.index_sha256 is not None:
            problem = checksum_problem(where, data, info.index_bytes, info.index_sha256)
            problems += [problem] if problem is not None else []
        text = data.decode("ascii")
        if files.records:
            lines = parse_record_index(text, where)
            problem = record_text_problem(where, data, lines)
            return [*problems, problem] if problem is not None else problems, lines
        if files.manifest.adopted:
            problems += adopted.wds_index_problems(
                where, data, files.index, files.manifest.fields, rows=rows, shard=shard
            )
            return problems, None
        samples = parse_wds_index(text, where)
    except UnicodeDecodeError as e:
        return [*problems, f"{where}: not ASCII text ({e})"], None
    except (FastpackError, OSError) as e:
        return [*problems, f"{type(e).__name__}: {e}"], None
    problems += wds_index_problems(
        where, samples, files.index, files.manifest.fields, rows=rows, shard=shard
    )
    problem = wds_text_problem(where, data, samples)
    return [*problems, problem] if problem is not None else problems, None


def _check_records(  # noqa: PLR0913 -- keyword inputs
    report: VerifyReport,
    files: DatasetFiles,
    shard: int,
    rows: Rows,
    *,
    data: bytes | mmap.mmap,
    idx_lines: list[tuple[int, int]] | None,
) -> None:
    """The records of a record shard mapped whole as `data`: their CRCs and tiling, one per
    sample, each sample's fields inside its record, and the DALI index `idx_lines` (None when
    it could not be read) against them."""
    name = str(files.shard_path(shard))
    scan = scan_window(name, data, 0, at_end=True, first=0)
    for problem in scan.problems:
        report.add(problem)
    samples = SampleRecords(name, files.index, files.manifest.schema, rows)
    for record in scan.records:
        for problem in samples.problems(record, data, 0):
            report.add(problem)
    if scan.going and (wrong_count := count_problem(name, len(scan.records), rows, shard)):
        report.add(wrong_count)
    if idx_lines is not None:
        idx_name = str(files.shard_index_path(shard))
        for problem in record_index_problems(idx_name, idx_lines, scan.records, scan.going):
            report.add(problem)
