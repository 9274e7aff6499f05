"""Datasets of several versions (formats/SPEC.md section 11), made from one build: version k
holds the first shards of the build, each later version more, as `fastpack append` lays them
out (version 1's manifest and index at the top and in `versions/000001/`, version N's index and
manifest in `versions/00000N/`, the latest manifest at the top)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    Index,
    IndexPart,
    IndexWriter,
    Manifest,
    VersionInfo,
    read_manifest,
    write_manifest,
)
from fastpack.formats.layout import EXTENDED_VERSION, version_index_name, version_manifest_name
from fastpack.formats.schema import FileInfo


class Versioned(NamedTuple):
    path: Path  # the dataset
    samples: tuple[int, ...]  # samples of each version: version k holds samples[k - 1]
    keys: tuple[tuple[str, ...], ...]  # the keys of each version's samples, in order


def _part(index: Index, fields: Sequence[str], shard: int, rows: range) -> IndexPart:
    """Rows `rows` (shard `shard`'s) of `index`, as a writer appends them."""

    def strings(name: str) -> tuple[np.ndarray, np.ndarray]:
        blob, offsets = index.string_table(name)
        start, end = int(offsets[rows.start]), int(offsets[rows.stop])
        return np.array(blob[start:end]), np.array(offsets[rows.start : rows.stop + 1]) - start

    key_blob, key_offsets = strings("key")
    source_blob, source_offsets = strings("source")
    s = slice(rows.start, rows.stop)
    return IndexPart(
        shard=shard,
        labels=np.array(index.label[s]),
        key_blob=key_blob,
        key_offsets=key_offsets,
        source_blob=source_blob,
        source_offsets=source_offsets,
        offsets={f: np.array(index.offsets(f)[s]) for f in fields},
        sizes={f: np.array(index.sizes(f)[s]) for f in fields},
        crc32={f: np.array(index.crc32(f)[s]) for f in fields},
    )


def write_prefix_index(
    index: Index, manifest: Manifest, shards: int, path: Path, version: int
) -> int:
    """The index of the first `shards` shards of `index` at `path`, of format `version`; its
    sample count."""
    fields = manifest.schema.names
    counts = [s.samples for s in manifest.shards[:shards]]
    n = sum(counts)
    key_bytes = int(index.string_table("key")[1][n])
    source_bytes = int(index.string_table("source")[1][n])
    path.parent.mkdir(parents=True, exist_ok=True)
    with IndexWriter(
        path=path,
        num_samples=n,
        num_shards=shards,
        fields=fields,
        key_blob_size=key_bytes,
        source_blob_size=source_bytes,
        version=version,
    ) as writer:
        start = 0
        for shard, count in enumerate(counts):
            writer.append(_part(index, fields, shard, range(start, start + count)))
            start += count
    return n


def _file_info(root: Path, name: str) -> FileInfo:
    data = (root / name).read_bytes()
    return FileInfo(name=name, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


def roll_back(root: Path, version: int) -> bytes:
    """Put version `version`'s manifest at the top of the dataset `root`, as it was before the
    later appends; the latest manifest's bytes, whose write publishes it again."""
    top = root / MANIFEST_NAME
    latest = top.read_bytes()
    top.write_bytes((root / version_manifest_name(version)).read_bytes())
    return latest


def make_versions(built: Path, shards: Sequence[int]) -> Versioned:
    """Turn the dataset `built` into one of `len(shards)` versions, version k holding its first
    `shards[k - 1]` shards (the last: all of them)."""
    full = read_manifest(built / MANIFEST_NAME)
    if list(shards) != sorted(set(shards)) or shards[-1] != len(full.shards):
        raise ValueError(f"shards {shards}: increasing, the last {len(full.shards)}")
    source = built / "build-index.fpx"
    (built / INDEX_NAME).rename(source)
    index = Index(source, full.schema.names)
    versions: list[VersionInfo] = []
    samples, keys = [], []
    for number, count in enumerate(shards, start=1):
        format_version = full.version if number == 1 else EXTENDED_VERSION
        index_name = version_index_name(number)
        n = write_prefix_index(index, full, count, built / index_name, format_version)
        payload = sum(int(np.sum(index.sizes(f)[:n], dtype=np.uint64)) for f in full.schema.names)
        manifest = replace(
            full,
            version=format_version,
            num_samples=n,
            shards=full.shards[:count],
            index=_file_info(built, index_name),
            stats={**full.stats, "inputs": n, "samples": n, "payload_bytes": payload},
            dataset_version=number,
            versions=tuple(versions),
        )
        if number == len(shards):  # the build's own stats, as they were
            manifest = replace(manifest, stats=full.stats)
        name = version_manifest_name(number)
        (built / name).parent.mkdir(parents=True, exist_ok=True)
        write_manifest(built / name, manifest)
        info = _file_info(built, name)
        versions.append(
            VersionInfo(
                number=number, name=name, bytes=info.bytes, sha256=info.sha256, num_samples=n
            )
        )
        samples.append(n)
        keys.append(tuple(index.key(i) for i in range(n)))
    del index
    source.unlink()
    (built / MANIFEST_NAME).write_bytes((built / version_manifest_name(len(shards))).read_bytes())
    return Versioned(built, tuple(samples), tuple(keys))


@pytest.fixture
def versioned(make_image_folder: Callable[..., Path], tmp_path: Path) -> Callable[..., Versioned]:
    """Factory: a dataset of 3 classes x `per_class` samples in small shards, made into versions
    holding the first `shards[k - 1]` shards each (default: 3 versions)."""

    def make(
        shards: Sequence[int] | None = None, *, per_class: int = 4, name: str = "ds", seed: int = 0
    ) -> Versioned:
        source = make_image_folder(
            classes=3, per_class=per_class, size=32, seed=seed, name=f"{name}-src"
        )
        out = tmp_path / name
        build(source, out, BuildOptions(workers=1, shard_size=2500, progress=False))
        count = len(read_manifest(out / MANIFEST_NAME).shards)
        return make_versions(out, shards or (1, count // 2, count))

    return make
