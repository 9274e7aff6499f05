"""A version's index: the previous version's rows, then the appended ones, copied a shard's
rows at a time from the two memory-mapped indexes by numpy slices (no per-sample work)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from fastpack.formats import CorruptIndexError, Index, IndexPart, IndexWriter
from fastpack.formats.schema import FileInfo

from ..written import file_info


def _blob_bytes(index: Index, name: str) -> int:
    return len(index.string_table(name)[0])


def _parts(index: Index, counts: Sequence[int], first_shard: int) -> Iterator[IndexPart]:
    """The rows of `index` as one part per shard (`counts[k]` samples each), shard `k`
    numbered `first_shard + k`."""
    keys, key_offsets = index.string_table("key")
    sources, source_offsets = index.string_table("source")
    if sum(counts) != index.num_samples:
        raise CorruptIndexError(
            f"{index.path}: {index.num_samples} samples, its manifest's shards hold {sum(counts)}"
        )
    start = 0
    for k, count in enumerate(counts):
        stop = start + count
        rows = slice(start, stop)
        k0, k1 = int(key_offsets[start]), int(key_offsets[stop])
        s0, s1 = int(source_offsets[start]), int(source_offsets[stop])
        yield IndexPart(
            shard=first_shard + k,
            labels=np.asarray(index.label[rows]),
            key_blob=np.asarray(keys[k0:k1]),
            key_offsets=key_offsets[start : stop + 1] - np.uint64(k0),
            source_blob=np.asarray(sources[s0:s1]),
            source_offsets=source_offsets[start : stop + 1] - np.uint64(s0),
            offsets={f: index.offsets(f)[rows] for f in index.fields},
            sizes={f: index.sizes(f)[rows] for f in index.fields},
            crc32={f: index.crc32(f)[rows] for f in index.fields},
        )
        start = stop


def merge_index(  # noqa: PLR0913 -- keyword inputs
    out: Path,
    name: str,
    *,
    previous: Index,
    previous_counts: Sequence[int],
    added: Index,
    added_counts: Sequence[int],
    version: int,
) -> FileInfo:
    """Write `out / name`: every row of `previous` (shards of `previous_counts` samples), then
    every row of `added`, whose shards follow the previous ones; an index of `version`. The
    fields are `previous`'s, which `added` must have too."""
    if added.fields != previous.fields:
        raise CorruptIndexError(
            f"{added.path}: fields {added.fields}, the dataset's index has {previous.fields}"
        )
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with IndexWriter(
        path=path,
        num_samples=previous.num_samples + added.num_samples,
        num_shards=len(previous_counts) + len(added_counts),
        fields=previous.fields,
        key_blob_size=_blob_bytes(previous, "key") + _blob_bytes(added, "key"),
        source_blob_size=_blob_bytes(previous, "source") + _blob_bytes(added, "source"),
        version=version,
    ) as writer:
        for part in _parts(previous, previous_counts, 0):
            writer.append(part)
        for part in _parts(added, added_counts, len(previous_counts)):
            writer.append(part)
    return file_info(path, name)
