"""Read a fastpack dataset built with `--shard-format tfrecord` in TensorFlow's `tf.data`: its
shards are plain TFRecord files of `tf.train.Example`s.

    fastpack build /data/train /data/train-records --shard-format tfrecord
    python examples/read_with_tensorflow.py /data/train-records --batch-size 64

Nothing here needs fastpack itself.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
import tensorflow as tf

FEATURES = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", type=Path, help="a fastpack dataset directory of TFRecord shards")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", type=int, default=224, help="resize every image to SIZE x SIZE")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    files = sorted(str(p) for p in (args.dataset / "shards").glob("*.tfrecord"))
    if not files:
        raise SystemExit(
            f"{args.dataset}: no shards/*.tfrecord (build with --shard-format tfrecord)"
        )

    def decode(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        example = tf.io.parse_single_example(record, FEATURES)
        image = tf.io.decode_jpeg(example["image/encoded"], channels=3)
        image = tf.cast(tf.image.resize(image, (args.size, args.size), antialias=True), tf.uint8)
        return image, example["image/class/label"]

    pipeline = (
        tf.data.TFRecordDataset(files)
        .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(args.batch_size)
        .prefetch(tf.data.AUTOTUNE)
    )
    labels: Counter[int] = Counter()
    batches = 0
    for images, batch_labels in pipeline:
        batches += 1
        labels.update(int(label) for label in batch_labels.numpy())
        if batches == 1:
            print(f"first batch: images {images.dtype.name} {tuple(images.shape)}")
    print(f"read {labels.total()} samples in {batches} batches from {len(files)} shards")
    print("samples per label: " + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())))


if __name__ == "__main__":
    main()
