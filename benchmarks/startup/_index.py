"""Synthetic datasets of any size for the start-up benchmark, written with fastpack's own writers.

A small real dataset (the *base*, built by `fastpack.compiler.build`) is repeated: row `i` of a
synthetic dataset of `N` rows is the base's row `i % R` (`R` base samples), with its own unique
key `sample_key(i)`. Each repetition of each base shard is a shard of its own, a symbolic link
to the base's tar (and `.idx`), so that shard numbers stay non-decreasing, the manifest lists
as many shards as a real dataset of that size would (one per ~`R` samples), and every payload
the index points at exists and decodes. The index is written by `IndexWriter`, one `IndexPart`
per shard; the manifest by `write_manifest`, with the base shards' sizes and SHA-256s.

Such a dataset opens and reads like any other; it does not pass `verify_dataset`: the member
names in the tars are the base's keys, and a shard's `.idx` lists the base shard's samples.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from fastpack.compiler import BuildOptions, build
from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    SHARDS_DIR,
    DatasetFiles,
    Index,
    IndexPart,
    IndexWriter,
    Manifest,
    ShardInfo,
    read_manifest,
    write_manifest,
)
from fastpack.formats.checksum import file_sha256
from fastpack.formats.layout import key_width, shard_idx_name, shard_tar_name
from fastpack.formats.schema import FileInfo
from fastpack.formats.string_table import pack_strings

StringTable = tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint64]]
SYNTHETIC_KEY = "synthetic"  # the manifest's `build` entry that describes the repetition


def build_base(source: Path, out: Path) -> Path:
    """The real dataset compiled from `source` (default build options), unless `out` holds one."""
    if not (out / MANIFEST_NAME).exists():
        if out.exists():
            shutil.rmtree(out)
        build(source, out, BuildOptions(workers=2, progress=False))
    return out


def sample_keys(first: int, count: int, width: int) -> StringTable:
    """Keys `first .. first+count-1` zero-padded to `width` digits, as a string table
    `(blob, offsets)`: what `pack_strings(sample_key(i, width) for i ...)` gives, vectorised."""
    numbers = np.arange(first, first + count, dtype=np.int64)
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    digits = (numbers[:, None] // powers) % 10 + ord("0")
    offsets = np.arange(count + 1, dtype="<u8") * np.uint64(width)
    return digits.astype(np.uint8).ravel(), offsets


@dataclass(frozen=True)
class _Piece:
    """Base rows `[start, stop)` (all in base shard `base_shard`) as synthetic shard `shard`,
    whose first row is synthetic sample `first`."""

    shard: int
    base_shard: int
    start: int
    stop: int
    first: int


def _pieces(shard_starts: list[int], num_samples: int) -> Iterator[_Piece]:
    """The synthetic shards: the base shards again and again until `num_samples` rows."""
    base_rows = shard_starts[-1]
    shard = 0
    for copy in range(-(-num_samples // base_rows)):
        left = num_samples - copy * base_rows
        for base_shard, (start, end) in enumerate(itertools.pairwise(shard_starts)):
            stop = min(end, left)
            if stop <= start:
                return
            yield _Piece(shard, base_shard, start, stop, copy * base_rows + start)
            shard += 1


def _part(base: Index, sources: StringTable, piece: _Piece, width: int) -> IndexPart:
    rows = slice(piece.start, piece.stop)
    key_blob, key_offsets = sample_keys(piece.first, piece.stop - piece.start, width)
    source_blob, all_offsets = sources
    source_offsets = all_offsets[piece.start : piece.stop + 1]
    source_blob = source_blob[int(source_offsets[0]) : int(source_offsets[-1])]
    return IndexPart(
        shard=piece.shard,
        labels=np.asarray(base.label[rows]),
        key_blob=key_blob,
        key_offsets=key_offsets,
        source_blob=source_blob,
        source_offsets=source_offsets - source_offsets[0],
        offsets={f: np.asarray(base.offsets(f)[rows]) for f in base.fields},
        sizes={f: np.asarray(base.sizes(f)[rows]) for f in base.fields},
        crc32={f: np.asarray(base.crc32(f)[rows]) for f in base.fields},
    )


def _link_shard(base: DatasetFiles, piece: _Piece, out: Path) -> ShardInfo:
    info = base.manifest.shards[piece.base_shard]
    links = (
        (out / shard_tar_name(piece.shard), base.shard_path(piece.base_shard)),
        (out / shard_idx_name(piece.shard), base.shard_index_path(piece.base_shard)),
    )
    for link, target in links:
        link.symlink_to(target.resolve())
    return ShardInfo(
        name=shard_tar_name(piece.shard),
        index_name=shard_idx_name(piece.shard),
        samples=piece.stop - piece.start,
        bytes=info.bytes,
        sha256=info.sha256,
    )


def _blob_bytes(offsets: npt.NDArray[np.uint64], num_samples: int) -> int:
    """Bytes of a string table repeated cyclically to `num_samples` rows."""
    rows = len(offsets) - 1
    copies, left = divmod(num_samples, rows)
    return copies * int(offsets[-1]) + int(offsets[left])


def write_synthetic(base_root: Path, out: Path, num_samples: int) -> Manifest:
    """A dataset of `num_samples` rows at `out` that repeats the base dataset (module docstring).
    Replaces whatever `out` held."""
    base = DatasetFiles(base_root)
    ix = base.index
    if num_samples < 1 or ix.num_samples < 1:
        raise ValueError(f"{base_root}: need >= 1 base sample and >= 1 row, got {num_samples}")
    sources = pack_strings(ix.source(i) for i in range(ix.num_samples))
    starts = np.searchsorted(np.asarray(ix.shard), np.arange(len(base.manifest.shards) + 1))
    pieces = list(_pieces([int(s) for s in starts], num_samples))
    if out.exists():
        shutil.rmtree(out)
    (out / SHARDS_DIR).mkdir(parents=True)
    width = key_width(num_samples)
    path = out / INDEX_NAME
    with IndexWriter(
        path=path,
        num_samples=num_samples,
        num_shards=len(pieces),
        fields=ix.fields,
        key_blob_size=num_samples * width,
        source_blob_size=_blob_bytes(sources[1], num_samples),
    ) as writer:
        for piece in pieces:
            writer.append(_part(ix, sources, piece, width))
    shards = tuple(_link_shard(base, piece, out) for piece in pieces)
    payload = np.sum([np.asarray(ix.sizes(f), dtype=np.int64) for f in ix.fields], axis=0)
    copies, left = divmod(num_samples, ix.num_samples)
    manifest = Manifest(
        num_samples=num_samples,
        fields=base.manifest.fields,
        classes=base.manifest.classes,
        key_width=width,
        shards=shards,
        index=FileInfo(name=INDEX_NAME, bytes=path.stat().st_size, sha256=file_sha256(path)),
        build={
            **base.manifest.build,
            SYNTHETIC_KEY: {"base": str(base_root.resolve()), "base_samples": ix.num_samples},
        },
        stats={
            "inputs": num_samples,
            "samples": num_samples,
            "rejected": 0,
            "converted": 0,
            "payload_bytes": copies * int(payload.sum()) + int(payload[:left].sum()),
        },
    )
    write_manifest(out / MANIFEST_NAME, manifest)
    return manifest


def synthetic_dataset(base_root: Path, out: Path, num_samples: int) -> Path:
    """`out`, written by `write_synthetic` unless it already holds that dataset."""
    manifest_path = out / MANIFEST_NAME
    if manifest_path.exists():
        manifest = read_manifest(manifest_path)
        base = manifest.build.get(SYNTHETIC_KEY, {}).get("base")
        if manifest.num_samples == num_samples and base == str(base_root.resolve()):
            return out
    write_synthetic(base_root, out, num_samples)
    return out
