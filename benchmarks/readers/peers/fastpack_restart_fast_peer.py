"""`fastpack-restart` with the faster crop setting, `RandomResizedCrop(224, max_upscale=2)`.
Same dataset as `fastpack-restart`."""

from __future__ import annotations

from pathlib import Path

from benchmarks.readers.peers.fastpack_peer import FastpackEpochs
from benchmarks.readers.peers.fastpack_peer import loader as fastpack_loader
from benchmarks.readers.peers.fastpack_restart_peer import convert

__all__ = ["convert", "loader"]


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FastpackEpochs:
    return fastpack_loader(workdir, batch_size, workers, seed, max_upscale=2.0)
