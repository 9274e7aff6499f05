"""The dataset an append grows: a local directory, or a prefix in an object store. What the
append asks of it: its latest version's manifest (and that file's bytes), its lock, where the
staged build goes, its zstd dictionaries, and how a staged build is published there."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from fastpack.formats import MANIFEST_NAME, DatasetNotFoundError, Manifest
from fastpack.formats.layout import VERSIONS_DIR, version_dir
from fastpack.formats.manifest import manifest_from_text, read_manifest_text
from fastpack.storage import Location, RetryPolicy, is_url

from ..build_dir import default_staging_dir
from ..jobs.duplicates import StoredDataset
from .errors import AppendError
from .lock import AppendLock, FileLock, ObjectLock
from .publish import publish_local
from .publish_store import PUBLISH_DIR, download_previous, publish_store

PARTIAL = ".partial"  # suffix of the staging directory of version N: versions/00000N.partial


def _stored(manifest: Manifest, index: str, root: str, location: Location | None) -> StoredDataset:
    return StoredDataset(
        index=index,
        fields=manifest.schema.names,
        image=image_field(manifest, root),
        shards=tuple(s.name for s in manifest.shards),
        root=root,
        location=location,
    )


def image_field(manifest: Manifest, where: str) -> str:
    """The field duplicates are looked for in: the schema's image; AppendError where it has
    none."""
    image = manifest.schema.image_field
    if image is None:
        raise AppendError(
            f"{where}: skip_duplicates compares images, and the dataset's fields "
            f"({', '.join(manifest.schema.names)}) hold none (no jpeg field): leave it out"
        )
    return image


def dictionary_names(manifest: Manifest) -> list[str]:
    """The files of the dataset's zstd dictionaries (`dicts/<field>.zdict`)."""
    return [
        spec.zstd.dictionary.name
        for spec in manifest.schema.fields
        if spec.zstd is not None and spec.zstd.dictionary is not None
    ]


def check_appendable(manifest: Manifest, where: str) -> None:
    """AppendError for a dataset an append cannot grow: one of adopted shards, or one whose
    manifest does not count its inputs (where the keys of new samples start)."""
    if manifest.adopted:
        raise AppendError(
            f"{where}: its shards are adopted (written by another tool, indexed by `fastpack "
            "index`); appending to such a dataset is not supported yet: build a fastpack "
            "dataset from them (`fastpack build`) to append to it"
        )
    inputs = manifest.stats.get("inputs")
    if type(inputs) is not int or inputs < manifest.num_samples:
        raise AppendError(
            f"{where}: its manifest's stats.inputs is {inputs!r}, expected the count of its "
            f"inputs (at least its {manifest.num_samples} samples), where the keys of new "
            "samples start"
        )


class AppendTarget(Protocol):
    name: str

    def latest(self) -> tuple[Manifest, bytes]:
        """The latest version's manifest, and the bytes of its file."""
        ...

    def lock(self) -> AppendLock: ...

    def staging(self, version: int) -> Path:
        """Where the staged build of version `version` goes."""
        ...

    def dictionaries(self, manifest: Manifest) -> dict[str, bytes]: ...

    def publish(
        self, version: int, previous: tuple[Manifest, bytes], staged: tuple[Path, Manifest]
    ) -> Manifest: ...

    def stored(self, manifest: Manifest, build_dir: Path) -> StoredDataset:
        """Where a staged build in `build_dir` finds the samples of `manifest`'s version."""
        ...


class LocalDataset:
    """A dataset directory; version N is staged in `versions/00000N.partial/` inside it, so
    that publishing moves files by renames."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = str(root)

    def latest(self) -> tuple[Manifest, bytes]:
        if not self.root.is_dir():
            raise DatasetNotFoundError(f"{self.root}: no such dataset directory")
        return read_manifest_text(self.root / MANIFEST_NAME)

    def lock(self) -> AppendLock:
        return FileLock(self.root)

    def staging(self, version: int) -> Path:
        return self.root / (version_dir(version) + PARTIAL)

    def leftovers(self, latest: int) -> list[Path]:
        """Staging directories of versions published already (up to `latest`)."""
        found = []
        for path in sorted((self.root / VERSIONS_DIR).glob(f"*{PARTIAL}")):
            number = path.name.removesuffix(PARTIAL)
            if number.isdigit() and int(number) <= latest:
                found.append(path)
        return found

    def dictionaries(self, manifest: Manifest) -> dict[str, bytes]:
        return {name: (self.root / name).read_bytes() for name in dictionary_names(manifest)}

    def publish(
        self, version: int, previous: tuple[Manifest, bytes], staged: tuple[Path, Manifest]
    ) -> Manifest:
        return publish_local(self.root, version, previous, staged)

    def stored(self, manifest: Manifest, build_dir: Path) -> StoredDataset:
        """Where the staged build finds the samples of `manifest`'s version."""
        del build_dir  # the index is read where it is
        return _stored(manifest, str(self.root / manifest.index.name), str(self.root), None)


class StoreDataset:
    """A dataset at an object store prefix; version N is staged in a local directory
    (`staging`, else one named after the URL and the version under the cache directory)."""

    def __init__(
        self,
        url: str,
        *,
        staging: Path | None,
        storage_options: Mapping[str, Any] | None,
        retry: RetryPolicy | None,
    ) -> None:
        self.location = Location(url, storage_options, retry)
        self.name = self.location.url
        self._staging = staging

    def latest(self) -> tuple[Manifest, bytes]:
        text = self.location.read_bytes(MANIFEST_NAME)
        return manifest_from_text(text, self.location.url_of(MANIFEST_NAME)), text

    def lock(self) -> AppendLock:
        return ObjectLock(self.location)

    def staging(self, version: int) -> Path:
        if self._staging is not None:
            return self._staging
        return default_staging_dir(self.location.url_of(version_dir(version) + PARTIAL))

    def leftovers(self, latest: int) -> list[Path]:
        found = [self.staging(v) for v in range(2, latest + 1)] if self._staging is None else []
        return [p for p in found if p.exists()]

    def dictionaries(self, manifest: Manifest) -> dict[str, bytes]:
        return {name: self.location.read_bytes(name) for name in dictionary_names(manifest)}

    def publish(
        self, version: int, previous: tuple[Manifest, bytes], staged: tuple[Path, Manifest]
    ) -> Manifest:
        return publish_store(self.location, version, previous, staged)

    def stored(self, manifest: Manifest, build_dir: Path) -> StoredDataset:
        """Where the staged build in `build_dir` finds the samples of `manifest`'s version: its
        index downloaded (once) where publishing reads it, its shards read in ranges from the
        store."""
        work = build_dir.parent / PUBLISH_DIR
        index = download_previous(self.location, manifest.index.name, work, manifest.index)
        return _stored(manifest, str(index), self.name, self.location)


def open_target(
    dataset: str,
    *,
    staging: Path | None,
    storage_options: Mapping[str, Any] | None,
    retry: RetryPolicy | None,
) -> LocalDataset | StoreDataset:
    if is_url(dataset):
        return StoreDataset(dataset, staging=staging, storage_options=storage_options, retry=retry)
    return LocalDataset(Path(dataset))


def remove_staging(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
