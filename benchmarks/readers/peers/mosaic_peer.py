"""Mosaic Streaming: MDS shards written by `MDSWriter`, read by `StreamingDataset` +
`StreamingDataLoader`; simplejpeg decode and OpenCV transform.

Configuration: `MDSWriter` in one process writes 16 MB shards, uncompressed, in random order;
each sample is the JPEG file's bytes in a "bytes" column (no re-encode, and no decode by the
reader: MDS's "jpeg" encoding would hand back a PIL image) and its label in an "int" column.
The loader is a `StreamingDataset` over the local shards (`shuffle=True`, Mosaic's default
shuffle algorithm, `batch_size` given so that its partitioning matches the batches) under a
`StreamingDataLoader` with `workers` persistent worker processes. `__getitem__` decodes with
simplejpeg (libjpeg-turbo, full size) and applies the same RandomResizedCrop + flip as the other
OpenCV peers. OpenCV's thread pool is off before the workers fork.

`import streaming` needs torchvision; without it, `benchmarks/readers/stubs` stands
in (see its README).
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

from benchmarks.readers.peers._base import (
    FixedEpochs,
    collate,
    imagefolder_root,
    list_imagefolder,
    worker_options,
    worker_rng,
)
from benchmarks.readers.peers._crop import Pixels, simplejpeg_decode_crop, single_threaded_opencv

SHARD_BYTES = 16 << 20

if importlib.util.find_spec("torchvision") is None:
    sys.path.append(str(Path(__file__).resolve().parents[1] / "stubs"))

# streaming imports torchvision: only after the stub path above
from streaming import MDSWriter, StreamingDataLoader, StreamingDataset  # noqa: E402 -- after setup
from streaming.base.util import clean_stale_shared_memory  # noqa: E402 -- after setup


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """`MDSWriter` in one process (its parallel path is one writer per process plus a merge)."""
    samples = list_imagefolder(imagefolder_root(imagefolder))
    random.Random(0).shuffle(samples)
    columns = {"image": "bytes", "label": "int"}
    with MDSWriter(out=str(workdir / "mds"), columns=columns, size_limit=SHARD_BYTES) as out:
        for sample in samples:
            out.write({"image": sample.path.read_bytes(), "label": sample.label})


def _dataset(workdir: Path, batch_size: int, seed: int) -> Any:

    class Dataset(StreamingDataset):  # type: ignore[misc]
        _rng: random.Random | None = None  # made in each worker on first use

        def __getitem__(self, i: int) -> tuple[Pixels, int]:
            if self._rng is None:
                self._rng = worker_rng(seed)
            item = super().__getitem__(i)
            return simplejpeg_decode_crop(item["image"], self._rng), int(item["label"])

    return Dataset(
        local=str(workdir / "mds"),
        shuffle=True,
        shuffle_seed=seed,
        batch_size=batch_size,
    )


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:
    single_threaded_opencv()
    clean_stale_shared_memory()
    dataset = _dataset(workdir, batch_size, seed)
    return FixedEpochs(
        StreamingDataLoader(
            dataset, batch_size=batch_size, collate_fn=collate, **worker_options(workers)
        )
    )
