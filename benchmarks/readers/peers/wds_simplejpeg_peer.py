"""webdataset tars read by the webdataset library; simplejpeg full decode + OpenCV crop/resize,
OpenCV's thread pool off (the DataLoader's worker processes are the parallelism)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.readers.peers import _wds
from benchmarks.readers.peers._base import FixedEpochs
from benchmarks.readers.peers._crop import simplejpeg_decode_crop, single_threaded_opencv


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """`webdataset.ShardWriter` in one process (it has no parallel writer)."""
    _wds.write_shards(imagefolder, workdir)


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:
    single_threaded_opencv()
    return _wds.make_loader(workdir, simplejpeg_decode_crop, batch_size, workers, seed)
