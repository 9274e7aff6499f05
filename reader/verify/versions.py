"""The earlier versions of a dataset grown by appends (formats/SPEC.md section 11), checked by
`verify_dataset` and `verify_remote` beside the latest one: each version's manifest against the
latest's record of it (`versions[]`: size and SHA-256) and as canonical text, the index (and
rejects) it names against their size and SHA-256, its own `versions[]` against the latest's, and
its shards and classes a prefix of the next version's; the latest manifest's copy in `versions/`
the same bytes as `fastpack.json`. The readers of an earlier version trust exactly these files.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fastpack.formats import (
    MANIFEST_NAME,
    DatasetNotFoundError,
    FastpackError,
    Manifest,
    VersionInfo,
)
from fastpack.formats.checksum import file_sha256_crc32c
from fastpack.formats.layout import version_manifest_name
from fastpack.formats.manifest import manifest_from_text
from fastpack.formats.schema import FileInfo
from fastpack.storage import Location

from .manifest_checks import manifest_text_problems
from .side_files import checksum_problem

REMOTE_CHUNK_BYTES = 8 * 2**20  # an earlier index at a URL is hashed in reads of this size


@dataclass(frozen=True)
class VersionFiles:
    """The files of a dataset by name: `read` a small one whole (`FileNotFoundError` or
    `DatasetNotFoundError` where there is none), `hashed` a large one's size and SHA-256,
    streamed (None where there is none), `where` how problems name one."""

    read: Callable[[str], bytes]
    hashed: Callable[[str], tuple[int, str] | None]
    where: Callable[[str], str]


@dataclass
class EarlierVersions:
    """What `check_versions` found: the manifests of the earlier versions that could be read
    (by version number), and the problems."""

    manifests: dict[int, Manifest] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def check_versions(root: Path, latest: Manifest, latest_text: bytes) -> EarlierVersions:
    """Every earlier version of the dataset in the directory `root` whose latest manifest is
    `latest` (read as `latest_text`); nothing for a dataset of one version."""
    return check_version_files(_local(root), latest, latest_text)


def check_remote_versions(
    location: Location, latest: Manifest, latest_text: bytes, chunk_bytes: int = REMOTE_CHUNK_BYTES
) -> EarlierVersions:
    """`check_versions` for the dataset at `location`, its indexes read in ranged reads of
    `chunk_bytes`."""
    return check_version_files(_remote(location, chunk_bytes), latest, latest_text)


def check_version_files(
    files: VersionFiles, latest: Manifest, latest_text: bytes
) -> EarlierVersions:
    """Every earlier version of the dataset whose files are `files` and whose latest manifest is
    `latest` (read as `latest_text`); nothing for a dataset of one version."""
    found = EarlierVersions()
    if latest.dataset_version == 1:
        return found
    copy = version_manifest_name(latest.dataset_version)
    text = _read(files, copy, "the latest manifest's copy", found.problems)
    if text is not None and text != latest_text:
        found.problems.append(
            f"{files.where(copy)}: not the bytes of {files.where(MANIFEST_NAME)}, the latest "
            "version's manifest"
        )
    for info in latest.versions:
        manifest = _version(files, info, latest, found.problems)
        if manifest is not None:
            found.manifests[info.number] = manifest
    chain = [*(found.manifests.get(v.number) for v in latest.versions), latest]
    for earlier, later in itertools.pairwise(chain):
        if earlier is not None and later is not None:
            found.problems += _prefix_problems(files, earlier, later, latest.dataset_version)
    return found


def _read(files: VersionFiles, name: str, what: str, problems: list[str]) -> bytes | None:
    """The bytes of `name`; None (and the problem) where it is missing or unreadable."""
    try:
        return files.read(name)
    except (FileNotFoundError, DatasetNotFoundError):
        problems.append(f"{files.where(name)}: file not found ({what})")
    except (FastpackError, OSError) as e:
        problems.append(f"{files.where(name)}: unreadable ({type(e).__name__}: {e})")
    return None


def _version(
    files: VersionFiles, info: VersionInfo, latest: Manifest, problems: list[str]
) -> Manifest | None:
    """Version `info.number`'s manifest, checked with the index and rejects it names (None
    where it cannot be read or parsed); its problems added to `problems`."""
    text = _read(files, info.name, f"version {info.number}'s manifest", problems)
    if text is None:
        return None
    path = files.where(info.name)
    where = f"{path} (version {info.number}'s manifest, as the latest records it)"
    problem = checksum_problem(where, text, info.bytes, info.sha256)
    problems += [problem] if problem is not None else []
    try:
        manifest = manifest_from_text(text, path)
    except FastpackError as e:
        problems.append(f"{type(e).__name__}: {e}")
        return None
    problems += manifest_text_problems(text, path, manifest)
    if (manifest.dataset_version, manifest.num_samples) != (info.number, info.num_samples):
        problems.append(
            f"{path}: describes version {manifest.dataset_version} of {manifest.num_samples} "
            f"samples, the latest records version {info.number} of {info.num_samples}"
        )
    if manifest.versions != latest.versions[: info.number - 1]:
        problems.append(
            f"{path}: its 'versions' are not the first {info.number - 1} of the latest manifest's"
        )
    for listed, what in ((manifest.index, "index"), (manifest.rejects, "rejects")):
        if listed is not None:
            problem = _file_problem(files, listed, f"version {info.number}'s {what}")
            problems += [problem] if problem is not None else []
    return manifest


def _file_problem(files: VersionFiles, info: FileInfo, what: str) -> str | None:
    """The file `info` names against its size and SHA-256."""
    where = files.where(info.name)
    try:
        found = files.hashed(info.name)
    except (FastpackError, OSError) as e:
        return f"{where}: unreadable ({type(e).__name__}: {e})"
    if found is None:
        return f"{where}: file not found ({what})"
    size, digest = found
    if size != info.bytes:
        return f"{where}: {size} bytes, the manifest of {what} records {info.bytes}"
    if digest != info.sha256:
        return f"{where}: sha256 {digest}, the manifest of {what} records {info.sha256}"
    return None


def _prefix_problems(
    files: VersionFiles, earlier: Manifest, later: Manifest, latest: int
) -> list[str]:
    """Version `later` keeps `earlier`'s shards (the same entries, in order) and classes first;
    `latest`: the latest version's number (whose manifest is `fastpack.json`)."""
    a, b = earlier.dataset_version, later.dataset_version
    where = files.where(MANIFEST_NAME if b == latest else version_manifest_name(b))
    problems = []
    count = len(earlier.shards)
    if later.shards[:count] != earlier.shards:
        pairs = zip(earlier.shards, later.shards, strict=False)
        first = next((k for k, (x, y) in enumerate(pairs) if x != y), len(later.shards))
        problems.append(
            f"{where}: version {b}'s shards do not begin with version {a}'s {count} (shard "
            f"{first} differs or is missing)"
        )
    if later.classes[: len(earlier.classes)] != earlier.classes:
        problems.append(f"{where}: version {b}'s classes do not begin with version {a}'s")
    return problems


def _local(root: Path) -> VersionFiles:
    def hashed(name: str) -> tuple[int, str] | None:
        path = root / name
        if not path.is_file():
            return None
        return path.stat().st_size, file_sha256_crc32c(path)[0]

    return VersionFiles(
        read=lambda name: (root / name).read_bytes(),
        hashed=hashed,
        where=lambda name: str(root / name),
    )


def _remote(location: Location, chunk_bytes: int) -> VersionFiles:
    def hashed(name: str) -> tuple[int, str] | None:
        size = location.size(name)
        if size is None:
            return None
        digest = hashlib.sha256()
        for chunk in location.iter_chunks(name, size, chunk_bytes):
            digest.update(chunk)
        return size, digest.hexdigest()

    return VersionFiles(read=location.read_bytes, hashed=hashed, where=location.url_of)
