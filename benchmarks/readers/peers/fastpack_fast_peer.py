"""fastpack with its faster crop setting, `RandomResizedCrop(224, max_upscale=2)`: a box of at
least the output size decodes at 1/2 scale and is enlarged up to 2x. Same dataset as `fastpack`."""

from __future__ import annotations

from pathlib import Path

from benchmarks.readers.peers.fastpack_peer import FastpackEpochs, convert
from benchmarks.readers.peers.fastpack_peer import loader as fastpack_loader

__all__ = ["convert", "loader"]


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FastpackEpochs:
    return fastpack_loader(workdir, batch_size, workers, seed, max_upscale=2.0)
