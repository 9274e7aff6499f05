"""fastpack with TFRecord shards (`shard_format="tfrecord"`): the same build, index and loader as
the `fastpack` peer; only the shard files differ (one `tf.train.Example` per sample)."""

from __future__ import annotations

from pathlib import Path

from fastpack.compiler import BuildOptions
from fastpack.compiler import build as fastpack_build

from benchmarks.readers.peers._base import imagefolder_root
from benchmarks.readers.peers.fastpack_peer import SHARD_BYTES, loader

__all__ = ["convert", "loader"]


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """A pass-through build into TFRecord shards with `workers` processes."""
    options = BuildOptions(
        workers=workers, shard_size=SHARD_BYTES, shard_format="tfrecord", progress=False
    )
    fastpack_build(imagefolder_root(imagefolder), workdir / "dataset", options)
