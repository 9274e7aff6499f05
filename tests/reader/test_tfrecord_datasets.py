"""Record (TFRecord) datasets read back as the tar datasets built from the same source: the same
samples in the same order through `Dataset` (image + label, and every field of a version-2
schema: zstd with a dictionary, masks, boxes, absent and empty optional members), `make_loader`,
and `StreamingDataset` from a local directory and from a real S3 server. The label's member in
a record is a varint, which the label field's codec reads."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.formats import DatasetFiles, FieldValueError
from fastpack.formats.example import varint
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop, make_loader
from fastpack.reader.streaming.cache import ShardCache
from fastpack.reader.streaming.dataset import StreamingDataset
from fastpack.reader.streaming.sources import FetchOptions
from fastpack.storage import RetryPolicy

from fastpack.info import dataset_info
from tests.publish import publish_dataset
from tests.reader._tfrecord_data import FIELDS_COUNT, Pair, build_fields_pair, build_pair, story
from tests.s3_server import S3Server

QUICK = FetchOptions(retry=RetryPolicy(attempts=2, backoff_s=0.05))


@pytest.fixture
def images(make_image_folder: Callable[..., Path], tmp_path: Path) -> Pair:
    """15 JPEGs of 3 classes, as tars and as records, 3 or 4 samples a shard."""
    source = make_image_folder(classes=3, per_class=5, size=48)
    pair = build_pair(source, tmp_path / "images", shard_size=20_000)
    assert len(DatasetFiles(pair.records).manifest.shards) >= 3
    return pair


@pytest.fixture(scope="module")
def fields(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    """The multi-field source (_tfrecord_data.py), as tars and as records, in several shards."""
    pair = build_fields_pair(tmp_path_factory.mktemp("fields"), shard_size=40_000)
    assert len(DatasetFiles(pair.records).manifest.shards) >= 3
    return pair


def assert_same(a: Any, b: Any, where: str) -> None:
    """Values equal and of the same type (arrays: dtype and contents)."""
    assert type(a) is type(b), where
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{k}]")
    elif hasattr(a, "_fields"):  # Padded
        assert_same(tuple(a), tuple(b), where)
    else:
        assert a == b, where


def digest(image: Any) -> str:
    return hashlib.sha1(np.ascontiguousarray(np.asarray(image)).tobytes()).hexdigest()


def test_shards_are_the_manifests_tfrecord_files(images: Pair) -> None:
    files = DatasetFiles(images.records)
    assert files.records
    assert not DatasetFiles(images.tar).records
    for k, shard in enumerate(files.manifest.shards):
        assert shard.name == f"shards/{k:06d}.tfrecord"
        assert files.shard_path(k).is_file()
        assert files.shard_index_path(k) == images.records / f"shards/{k:06d}.idx"
    info = dataset_info(images.records)
    assert info.to_dict()["shard_format"] == "tfrecord"
    assert "shards/000000.tfrecord" in info.format()
    assert dataset_info(images.tar).to_dict()["shard_format"] == "tar"


def test_image_label_samples_match(images: Pair) -> None:
    tar, records = Dataset(images.tar), Dataset(images.records)
    assert len(tar) == len(records) == 15
    np.testing.assert_array_equal(tar.labels, records.labels)
    for i in range(len(tar)):
        assert (tar.key(i), tar.source(i)) == (records.key(i), records.source(i))
        assert bytes(tar.read_bytes(i)) == bytes(records.read_bytes(i))
        assert_same(tar[i], records[i], f"sample {i}")
    assert [digest(image) for image, _ in records] == [digest(image) for image, _ in tar]


@pytest.mark.parametrize("io", ["mmap", "pread"])
def test_batches_with_a_transform_match(images: Pair, io: str) -> None:
    transform = RandomResizedCrop(32)
    tar = Dataset(images.tar, transform=transform, seed=3, io=io)  # type: ignore[arg-type]
    records = Dataset(images.records, transform=transform, seed=3, io=io)  # type: ignore[arg-type]
    for epoch in range(2):
        tar.set_epoch(epoch)
        records.set_epoch(epoch)
        rows = [14, 0, 7, 3, 9]
        assert_same(tar.__getitems__(rows), records.__getitems__(rows), f"epoch {epoch}")


def test_the_label_member_is_a_varint(images: Pair) -> None:
    """In a record the label field's bytes are the varint of `image/class/label`; its codec
    reads and writes them, as the tar's codec reads and writes ASCII decimals."""
    tar, records = Dataset(images.tar), Dataset(images.records)
    tar_codec = DatasetFiles(images.tar).codec("cls")
    codec = DatasetFiles(images.records).codec("cls")
    assert codec.varint
    assert not tar_codec.varint
    for i in range(len(records)):
        label = int(records.labels[i])
        member = bytes(records.read_bytes(i, "cls"))
        assert member == varint(label) == codec.encode(label)
        assert codec.decode(member) == label == tar_codec.decode(tar.read_bytes(i, "cls"))
    assert codec.decode(varint(-5)) == -5
    with pytest.raises(FieldValueError, match="not one protobuf varint"):
        codec.decode(b"\x85")


def test_make_loader_batches_match(images: Pair) -> None:
    def epoch(path: Path) -> list[tuple[Any, Any]]:
        dataset = Dataset(path, transform=CenterCrop(32, resize=36))
        loader = make_loader(dataset, batch_size=4, shuffle=True, seed=1, num_workers=0)
        return [(x.numpy(), y.numpy()) for x, y in loader]

    tar, records = epoch(images.tar), epoch(images.records)
    assert [len(y) for _, y in records] == [4, 4, 4, 3]
    assert_same(tar, records, "make_loader")


def test_every_field_matches(fields: Pair) -> None:
    names = DatasetFiles(fields.records).manifest.schema.names
    tar, records = Dataset(fields.tar, fields=names), Dataset(fields.records, fields=names)
    assert len(records) == FIELDS_COUNT
    for i in range(len(tar)):
        assert_same(tar[i], records[i], f"sample {i}")
    notes = [records[i][names.index("note.txt")] for i in range(len(records))]
    assert notes[1] == ""  # present and empty
    assert [i for i, note in enumerate(notes) if note is None] == [0, 2, 4, 6, 8, 10]
    stories = [records[i][names.index("story.txt.zst")] for i in range(len(records))]
    assert stories == [story(i) for i in range(len(records))]
    zstd = DatasetFiles(fields.records).manifest.schema["story.txt.zst"].zstd
    assert zstd is not None
    assert zstd.dictionary is not None


def test_field_batches_through_a_transform_match(fields: Pair) -> None:
    """Masks and boxes follow the crop alike; padded batches, absent members."""
    names = ("jpg", "seg.png", "boxes.npy", "cls", "note.txt", "ids.json", "meta.json.zst")
    batches = [
        Dataset(path, fields=names, transform=RandomResizedCrop(24), seed=5, pad=True).__getitems__(
            list(range(FIELDS_COUNT))
        )
        for path in fields
    ]
    assert_same(batches[0], batches[1], "batch")


def test_streaming_matches_locally(images: Pair, fields: Pair) -> None:
    def stream(path: Path, **options: Any) -> list[tuple[Any, ...]]:
        return list(StreamingDataset(path, shuffle=False, **options))

    tar, records = stream(images.tar), stream(images.records)
    assert len(records) == 15
    assert_same(tar, records, "image + label stream")
    assert [digest(image) for image, _ in records] == [digest(s[0]) for s in Dataset(images.tar)]
    names = ("jpg", "cls", "note.txt", "story.txt.zst", "boxes.npy", "seg.png")
    assert_same(stream(fields.tar, fields=names), stream(fields.records, fields=names), "fields")
    shuffled = [
        list(StreamingDataset(path, seed=2, shuffle_window=2, rank=1, world_size=2))
        for path in images
    ]
    assert_same(shuffled[0], shuffled[1], "shuffled stream")


def test_streaming_from_s3(
    images: Pair, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    """Record shards fetched into the shard cache by their manifest names, which the cache
    counts against its limit."""
    url = f"s3://{s3_bucket}/records"
    publish_dataset(images.records, url, s3_server.storage_options)
    largest = max(s.bytes for s in DatasetFiles(images.records).manifest.shards)
    limit = 4 * largest  # (shuffle_window 1 + prefetch 1) x 2 streams of room
    samples: list[tuple[Any, ...]] = []
    for rank in range(2):
        dataset = StreamingDataset(
            url,
            rank=rank,
            world_size=2,
            shuffle_window=1,
            prefetch=1,
            seed=4,
            cache_dir=tmp_path / "cache",
            cache_limit=limit,
            fetch=QUICK,
            storage_options=s3_server.storage_options,
        )
        samples += list(dataset)
        cache = ShardCache(dataset.root, limit)
        cached = sorted(p.name for p in (dataset.root / "shards").iterdir())
        assert cached
        assert all(name.endswith(".tfrecord") for name in cached), cached
        assert 0 < cache.usage() <= limit
    assert len(samples) == 16  # ceil(15 / 2) a rank: one sample read twice
    expected = {(digest(image), int(label)) for image, label in Dataset(images.records)}
    assert {(digest(image), int(label)) for image, label in samples} == expected
