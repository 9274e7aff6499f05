"""fastpack at full quality (`RandomResizedCrop(224)`, as `fastpack`) from a build with
`--restart-markers`: every JPEG stored with restart markers that split each MCU row into
intervals of about 128 pixels, so a crop entropy-decodes only the intervals around it."""

from __future__ import annotations

from pathlib import Path

from fastpack.compiler.images.baseline import RESTART_WIDTH

from benchmarks.readers.peers.fastpack_peer import FastpackEpochs, build
from benchmarks.readers.peers.fastpack_peer import loader as fastpack_loader

__all__ = ["convert", "loader"]


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """A build with `workers` processes, every JPEG transcoded with restart markers."""
    build(imagefolder, workdir / "dataset", workers, restart_width=RESTART_WIDTH)


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FastpackEpochs:
    return fastpack_loader(workdir, batch_size, workers, seed)
