"""TFRecord sources: files of `tf.train.Example` records (`source`), found and read a chunk at a
time (`files`), which features feed which fields (`layout`) and the rows of one file (`rows`)."""

from .source import scan_tfrecord

__all__ = ["scan_tfrecord"]
