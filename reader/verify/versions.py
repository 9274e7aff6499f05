"""The earlier versions of a dataset grown by appends (formats/SPEC.md section 11), checked by
`verify_dataset` beside the latest one: each version's manifest against the latest's record of
it (`versions[]`: size and SHA-256) and as canonical text, the index (and rejects) it names
against their size and SHA-256, its own `versions[]` against the latest's, and its shards and
classes a prefix of the next version's; the latest manifest's copy in `versions/` the same bytes
as `fastpack.json`. The readers of an earlier version trust exactly these files."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from fastpack.formats import MANIFEST_NAME, FastpackError, Manifest, VersionInfo
from fastpack.formats.checksum import file_sha256_crc32c
from fastpack.formats.layout import version_manifest_name
from fastpack.formats.manifest import manifest_from_text
from fastpack.formats.schema import FileInfo

from .manifest_checks import manifest_text_problems
from .side_files import checksum_problem


@dataclass
class EarlierVersions:
    """What `check_versions` found: the manifests of the earlier versions that could be read
    (by version number), and the problems."""

    manifests: dict[int, Manifest] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def check_versions(root: Path, latest: Manifest, latest_text: bytes) -> EarlierVersions:
    """Every earlier version of the dataset in `root` whose latest manifest is `latest` (read
    as `latest_text`); nothing for a dataset of one version."""
    found = EarlierVersions()
    if latest.dataset_version == 1:
        return found
    copy = root / version_manifest_name(latest.dataset_version)
    if not copy.is_file():
        found.problems.append(f"{copy}: file not found (the latest manifest's copy)")
    elif copy.read_bytes() != latest_text:
        found.problems.append(
            f"{copy}: not the bytes of {root / 'fastpack.json'}, the latest version's manifest"
        )
    for info in latest.versions:
        manifest = _version(root, info, latest, found.problems)
        if manifest is not None:
            found.manifests[info.number] = manifest
    chain = [*(found.manifests.get(v.number) for v in latest.versions), latest]
    for earlier, later in itertools.pairwise(chain):
        if earlier is not None and later is not None:
            found.problems += _prefix_problems(root, earlier, later, latest.dataset_version)
    return found


def _version(
    root: Path, info: VersionInfo, latest: Manifest, problems: list[str]
) -> Manifest | None:
    """Version `info.number`'s manifest, checked with the index it names (None where it cannot
    be read or parsed); its problems added to `problems`."""
    path = root / info.name
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        problems.append(f"{path}: file not found (version {info.number}'s manifest)")
        return None
    except OSError as e:
        problems.append(f"{path}: unreadable ({type(e).__name__}: {e})")
        return None
    where = f"{path} (version {info.number}'s manifest, as the latest records it)"
    problem = checksum_problem(where, text, info.bytes, info.sha256)
    problems += [problem] if problem is not None else []
    try:
        manifest = manifest_from_text(text, str(path))
    except FastpackError as e:
        problems.append(f"{type(e).__name__}: {e}")
        return None
    problems += manifest_text_problems(text, str(path), manifest)
    if (manifest.dataset_version, manifest.num_samples) != (info.number, info.num_samples):
        problems.append(
            f"{path}: describes version {manifest.dataset_version} of {manifest.num_samples} "
            f"samples, the latest records version {info.number} of {info.num_samples}"
        )
    if manifest.versions != latest.versions[: info.number - 1]:
        problems.append(
            f"{path}: its 'versions' are not the first {info.number - 1} of the latest manifest's"
        )
    files = [(manifest.index, "index"), (manifest.rejects, "rejects")]
    for listed, what in files:
        problem = (
            None
            if listed is None
            else _file_problem(root, listed, f"version {info.number}'s {what}")
        )
        problems += [problem] if problem is not None else []
    return manifest


def _file_problem(root: Path, info: FileInfo, what: str) -> str | None:
    """The file `info` names against its size and SHA-256, streamed."""
    path = root / info.name
    if not path.is_file():
        return f"{path}: file not found ({what})"
    size = path.stat().st_size
    if size != info.bytes:
        return f"{path}: {size} bytes, the manifest of {what} records {info.bytes}"
    digest, _ = file_sha256_crc32c(path)
    if digest != info.sha256:
        return f"{path}: sha256 {digest}, the manifest of {what} records {info.sha256}"
    return None


def _prefix_problems(root: Path, earlier: Manifest, later: Manifest, latest: int) -> list[str]:
    """Version `later` keeps `earlier`'s shards (the same entries, in order) and classes first;
    `latest`: the latest version's number (whose manifest is `fastpack.json`)."""
    a, b = earlier.dataset_version, later.dataset_version
    where = root / (MANIFEST_NAME if b == latest else version_manifest_name(b))
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
