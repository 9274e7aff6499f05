"""The loaders under test, one module per peer (`<module>.py` with `convert` and `loader`, see
`_base.Peer`), and what the harness needs to know about each without importing it."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import cast

from benchmarks.readers.peers._base import Batch, Epochs, Peer


@dataclass(frozen=True)
class PeerInfo:
    module: str
    format: str  # directory of the converted dataset; peers with one format share a conversion
    worker_kind: str  # what `workers` means: "processes" or "threads"
    writer: str  # how the conversion runs; "{workers}" stands for the worker count
    description: str


PEERS: dict[str, PeerInfo] = {
    "fastpack": PeerInfo(
        "fastpack_peer", "fastpack", "processes", "build, {workers} processes",
        "fastpack Dataset + make_loader, default RandomResizedCrop (max_upscale=1: full "
        "quality): only the crop's window decoded, batch per worker call",
    ),
    "fastpack-fast": PeerInfo(
        "fastpack_fast_peer", "fastpack", "processes", "build, {workers} processes",
        "fastpack Dataset + make_loader, RandomResizedCrop(max_upscale=2): a crop may decode at "
        "a smaller DCT scale and be enlarged up to 2x (the faster setting)",
    ),
    "fastpack-simplejpeg-fast": PeerInfo(
        "fastpack_simplejpeg_peer", "fastpack", "processes", "build, {workers} processes",
        "fastpack's previous default: max_upscale=2, simplejpeg decodes the whole image at the "
        "DCT scale (window decode off)",
    ),
    "fastpack-restart": PeerInfo(
        "fastpack_restart_peer", "fastpack-restart", "processes", "build, {workers} processes",
        "fastpack Dataset + make_loader, full quality, from a build with --restart-markers: a "
        "crop entropy-decodes only the restart intervals around its window",
    ),
    "fastpack-restart-fast": PeerInfo(
        "fastpack_restart_fast_peer", "fastpack-restart", "processes",
        "build, {workers} processes",
        "fastpack from a build with --restart-markers, RandomResizedCrop(max_upscale=2)",
    ),
    "fastpack-tfrecord": PeerInfo(
        "fastpack_tfrecord_peer", "fastpack-tfrecord", "processes", "build, {workers} processes",
        "fastpack as above, from TFRecord shards (one tf.train.Example per sample)",
    ),
    "imagefolder-pil": PeerInfo(
        "imagefolder_peer", "imagefolder", "processes", "none",
        "one file per image, PIL decode + transform (Pillow-SIMD where installed, see the "
        "versions), torch DataLoader",
    ),
    "imagefolder-cv2": PeerInfo(
        "imagefolder_cv2_peer", "imagefolder", "processes", "none",
        "one file per image, OpenCV decode (cv2.imdecode) + OpenCV crop/resize, torch DataLoader",
    ),
    "wds-simplejpeg": PeerInfo(
        "wds_simplejpeg_peer", "webdataset", "processes", "ShardWriter, 1 process",
        "webdataset tars, simplejpeg full decode + OpenCV crop/resize",
    ),
    "wds-pil": PeerInfo(
        "wds_pil_peer", "webdataset", "processes", "ShardWriter, 1 process",
        "webdataset tars, PIL decode + transform",
    ),
    "litdata": PeerInfo(
        "litdata_peer", "litdata", "processes", "optimize, {workers} processes",
        "LitData chunks of JPEG bytes, StreamingDataset + StreamingDataLoader, simplejpeg full "
        "decode + OpenCV crop/resize",
    ),
    "ffcv": PeerInfo(
        "ffcv_peer", "ffcv", "threads", "DatasetWriter, {workers} processes, re-encodes",
        "FFCV .beton (its writer re-encodes the JPEGs), Loader with OrderOption.RANDOM and "
        "os_cache=True (its guide's choice for a dataset that fits in memory), "
        "RandomResizedCropRGBImageDecoder + flip, numba threads",
    ),
    "dali-cpu": PeerInfo(
        "dali_peer", "webdataset-dali", "threads", "ShardWriter + wds2idx, 1 process",
        "DALI on the CPU: its webdataset reader over the same tars (wds2idx indexes), "
        "fn.decoders.image_random_crop (decodes only the crop's region) + resize + flip",
    ),
    "mosaic": PeerInfo(
        "mosaic_peer", "mosaic", "processes", "MDSWriter, 1 process",
        "Mosaic Streaming MDS (bytes column), StreamingDataset + StreamingDataLoader, simplejpeg "
        "full decode + OpenCV crop/resize",
    ),
}  # fmt: skip


def load_peer(name: str) -> Peer:
    """Import the module of peer `name` (its library imports happen here)."""
    if name not in PEERS:
        raise KeyError(f"unknown peer {name!r}; peers are {', '.join(PEERS)}")
    return cast(Peer, importlib.import_module(f"{__name__}.{PEERS[name].module}"))


__all__ = ["PEERS", "Batch", "Epochs", "Peer", "PeerInfo", "load_peer"]
