"""ImageFolder with OpenCV: the ImageFolder peer's listing and DataLoader, each file read whole and
decoded by `cv2.imdecode` (full size, libjpeg-turbo inside OpenCV), then the same
RandomResizedCrop + flip on the array as the other OpenCV peers (`_crop.cv_random_resized_crop`).
OpenCV's thread pool is off (`cv2.setNumThreads(1)` before the workers fork): the DataLoader's
worker processes are the parallelism."""

from __future__ import annotations

import random
from pathlib import Path

from benchmarks.readers.peers import imagefolder_peer
from benchmarks.readers.peers._base import FixedEpochs
from benchmarks.readers.peers._crop import Pixels, cv2_decode_crop, single_threaded_opencv


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """As the ImageFolder peer: nothing to convert, the loader lists the corpus itself."""
    imagefolder_peer.convert(imagefolder, workdir, workers)


def _cv2_read(path: str, rng: random.Random) -> Pixels:
    with open(path, "rb") as f:
        return cv2_decode_crop(f.read(), rng)


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:
    single_threaded_opencv()
    return imagefolder_peer.folder_loader(workdir, _cv2_read, batch_size, workers, seed)
