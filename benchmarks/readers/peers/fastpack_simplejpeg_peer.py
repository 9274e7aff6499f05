"""fastpack's crops as they were before the window decode: `max_upscale=2`, and simplejpeg
decodes the whole image at the DCT scale before the box is cut (`use_window_decode(False)`,
inherited by the forked DataLoader workers). Same dataset as `fastpack`."""

from __future__ import annotations

from pathlib import Path

from fastpack.reader.image.crop_decode import use_window_decode

from benchmarks.readers.peers.fastpack_peer import FastpackEpochs, convert
from benchmarks.readers.peers.fastpack_peer import loader as fastpack_loader

__all__ = ["convert", "loader"]


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FastpackEpochs:
    use_window_decode(False)
    return fastpack_loader(workdir, batch_size, workers, seed, max_upscale=2.0)
