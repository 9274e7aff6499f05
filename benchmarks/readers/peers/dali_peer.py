"""DALI, CPU only (`device_id=None`): `fn.readers.webdataset` over the webdataset tars with their
wds2idx indexes, `fn.decoders.image_random_crop` (decodes only the cropped region), `fn.resize`,
`fn.flip`. `workers` is DALI's `num_threads` in one process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from nvidia.dali import fn, pipeline_def, types

from benchmarks.readers.peers import _wds
from benchmarks.readers.peers._base import Batch
from benchmarks.readers.peers._crop import FLIP_PROB, RATIO, SCALE, SIZE


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """The webdataset peer's tars, plus one index per tar from DALI's `wds2idx` tool."""
    wds2idx = Path(sys.executable).with_name("wds2idx")
    for tar in _wds.write_shards(imagefolder, workdir):
        index = tar.with_suffix(".idx")
        subprocess.run([str(wds2idx), str(tar), str(index)], check=True, stdout=subprocess.DEVNULL)


def _pipeline(workdir: Path, batch_size: int, workers: int, seed: int) -> Any:

    tars = _wds.shards(workdir)

    @pipeline_def(batch_size=batch_size, num_threads=workers, device_id=None, seed=seed)
    def pipe() -> tuple[Any, Any]:
        jpg, cls = fn.readers.webdataset(
            paths=[str(t) for t in tars],
            index_paths=[str(t.with_suffix(".idx")) for t in tars],
            ext=["jpg", "cls"],
            random_shuffle=True,
            initial_fill=_wds.SHUFFLE_BUFFER,
            name="reader",
        )
        images = fn.decoders.image_random_crop(
            jpg,
            device="cpu",
            output_type=types.RGB,
            random_area=list(SCALE),
            random_aspect_ratio=list(RATIO),
            num_attempts=10,
        )
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        images = fn.flip(images, horizontal=fn.random.coin_flip(probability=FLIP_PROB))
        return images, cls

    pipeline = pipe()
    pipeline.build()
    return pipeline


class _DaliEpochs:
    """`ceil(N / batch)` runs of the pipeline per epoch; the reader wraps around by itself."""

    def __init__(self, pipeline: Any, batch_size: int) -> None:
        self.pipeline = pipeline
        self.batch_size = batch_size
        self.samples = int(next(iter(pipeline.epoch_size().values())))

    def epoch(self, e: int) -> Iterator[Batch]:
        for start in range(0, self.samples, self.batch_size):
            images, cls = self.pipeline.run()
            keep = min(self.batch_size, self.samples - start)
            labels = [int(bytes(np.asarray(c))) for c in cls][:keep]
            yield (
                torch.from_numpy(images.as_array()[:keep]),
                torch.tensor(labels, dtype=torch.int64),
            )


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> _DaliEpochs:
    return _DaliEpochs(_pipeline(workdir, batch_size, workers, seed), batch_size)
