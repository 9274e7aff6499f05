"""The loaders under test, one module per peer (`<name>_peer.py`), each with `FORMAT`,
`WORKER_KIND`, `convert(imagefolder, workdir, workers)` and `loader(workdir, batch_size, workers,
seed)`; see `_base.Peer`."""

from __future__ import annotations

import importlib
from typing import cast

from ._base import Batch, Epochs, Peer

# CLI name -> (module, one-line description for the results table)
PEERS: dict[str, tuple[str, str]] = {
    "fastpack": ("fastpack_peer", "fastpack Dataset + make_loader (DCT-scaled simplejpeg decode)"),
    "imagefolder-pil": ("imagefolder_peer", "ImageFolder-style files, PIL decode + transform"),
    "wds-simplejpeg": ("wds_simplejpeg_peer", "webdataset tars, simplejpeg decode, OpenCV resize"),
    "wds-pil": ("wds_pil_peer", "webdataset tars, PIL decode + transform"),
    "litdata": ("litdata_peer", "LitData optimize + StreamingDataset, PIL decode + transform"),
    "ffcv": ("ffcv_peer", "FFCV .beton, RandomResizedCropRGBImageDecoder"),
    "dali-cpu": ("dali_peer", "DALI CPU pipeline over webdataset tars + wds2idx"),
    "mosaic": ("mosaic_peer", "Mosaic Streaming MDS, PIL decode + transform"),
}


def load_peer(name: str) -> Peer:
    """Import the module of peer `name` (its library imports happen here)."""
    if name not in PEERS:
        raise KeyError(f"unknown peer {name!r}; peers are {', '.join(PEERS)}")
    return cast(Peer, importlib.import_module(f"{__name__}.{PEERS[name][0]}"))


__all__ = ["PEERS", "Batch", "Epochs", "Peer", "load_peer"]
