"""fastpack at full quality (`RandomResizedCrop(224)`, as `fastpack`) from a build with
`--restart-rows 1`: every JPEG stored with a restart marker after each MCU row, so a crop's
entropy decoding starts at the marker above its window instead of at the top of the image."""

from __future__ import annotations

from pathlib import Path

from benchmarks.readers.peers.fastpack_peer import FastpackEpochs, build
from benchmarks.readers.peers.fastpack_peer import loader as fastpack_loader

__all__ = ["convert", "loader"]
RESTART_ROWS = 1


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """A build with `workers` processes, every JPEG transcoded with restart markers."""
    build(imagefolder, workdir / "dataset", workers, restart_rows=RESTART_ROWS)


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FastpackEpochs:
    return fastpack_loader(workdir, batch_size, workers, seed)
