"""webdataset tars read by the webdataset library; PIL decode and transform (torchvision-like)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.readers.peers import _wds
from benchmarks.readers.peers._base import FixedEpochs
from benchmarks.readers.peers._crop import pil_decode_crop


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """`webdataset.ShardWriter` in one process (it has no parallel writer)."""
    _wds.write_shards(imagefolder, workdir)


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:
    return _wds.make_loader(workdir, pil_decode_crop, batch_size, workers, seed)
