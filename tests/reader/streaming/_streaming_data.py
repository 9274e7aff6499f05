"""Helpers of the streaming tests: small datasets, and telling which sample an image is."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from fastpack.compiler import BuildOptions, build
from fastpack.reader import Dataset


def build_small(source: Path, out: Path, shard_size: int = 16_000) -> Path:
    """Compile the ImageFolder `source` into `out`, in shards of a few samples each."""
    build(source, out, BuildOptions(workers=1, shard_size=shard_size, progress=False))
    return out


def digest(image: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(image).tobytes()).hexdigest()


def sample_of_image(path: Path) -> dict[str, int]:
    """Map the digest of every decoded image of the local dataset at `path` to its index."""
    dataset = Dataset(path)
    found = {digest(dataset[i][0]): i for i in range(len(dataset))}
    assert len(found) == len(dataset), "test images must differ"
    return found


def indices(images: Iterable[np.ndarray], by_digest: dict[str, int]) -> list[int]:
    return [by_digest[digest(np.asarray(image))] for image in images]


def counts(ids: Iterable[int], num_samples: int) -> np.ndarray:
    seen = Counter(ids)
    return np.array([seen.get(i, 0) for i in range(num_samples)])
