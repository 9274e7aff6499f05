"""The image payloads of a sample of the dataset, read into memory for the decode ceiling:
evenly spaced over the samples, from local shards or by ranged reads of the URL's."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastpack.formats import DatasetFiles, FastpackError
from fastpack.reader import Dataset
from fastpack.storage import Location

from .target import Target

SAMPLED = 256  # payloads decoded in a loop by the ceiling
FETCH_THREADS = 8  # ranged reads in flight for a remote sample


@dataclass(frozen=True)
class Payloads:
    ids: tuple[int, ...]  # the samples, to name one that does not decode
    data: tuple[bytes, ...]


def sample_ids(num_samples: int, count: int = SAMPLED) -> tuple[int, ...]:
    """Up to `count` distinct sample numbers spread evenly from the first to the last."""
    if num_samples <= 0:
        return ()
    spread = np.linspace(0, num_samples - 1, min(num_samples, count))
    return tuple(int(i) for i in np.unique(spread.round().astype(np.int64)))


def read_payloads(target: Target, storage_options: Mapping[str, Any] | None) -> Payloads:
    """The image payloads of `sample_ids` of the dataset: from its local copy when it has one,
    else by ranged reads of the shards at its URL."""
    ids = sample_ids(target.manifest.num_samples)
    if not ids:
        raise FastpackError(f"{target.path}: the dataset has no samples to bench")
    if target.manifest.schema.image_field is None:
        raise FastpackError(
            f"{target.path}: no jpeg field to decode; fields are {target.manifest.schema.names}"
        )
    if target.local is not None:
        with Dataset(target.local) as dataset:
            data = tuple(bytes(dataset.read_bytes(i)) for i in ids)
    else:
        data = _fetch(target, ids, Location(target.path, storage_options))
    return Payloads(ids, data)


def _fetch(target: Target, ids: tuple[int, ...], location: Location) -> tuple[bytes, ...]:
    files = DatasetFiles(target.metadata)
    field = target.manifest.schema.image_field
    if field is None:
        raise FastpackError(f"{target.path}: no jpeg field to decode")
    shards = target.manifest.shards

    def read(i: int) -> bytes:
        shard = shards[int(files.index.shard[i])]
        _, offset, size = files.index.locate(i, field, shard.bytes)
        data: bytes = location.read_range(shard.name, offset, offset + size)
        return data

    with ThreadPoolExecutor(FETCH_THREADS) as pool:
        return tuple(pool.map(read, ids))
