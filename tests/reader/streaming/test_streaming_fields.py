"""StreamingDataset(fields=...): the same values as the map-style reader, batched by the same
rules, from a local directory and from an S3 bucket (zstd dictionaries fetched with the index)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.formats import ShardFormatError
from fastpack.reader import Dataset, Padded, RandomResizedCrop, StreamingDataset
from fastpack.reader.remote import fetch_dataset
from fastpack.reader.streaming import FetchOptions
from fastpack.storage import RetryPolicy
from torch.utils.data import DataLoader

from tests.reader.map_style._fields_data import ALL, write_fields_dataset
from tests.s3_server import S3Server

N = 12
QUICK = FetchOptions(retry=RetryPolicy(attempts=2, backoff_s=0.05))
META = ALL.index("meta.json")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_fields_dataset(tmp_path / "fields", N, samples_per_shard=3)


def _assert_same_sample(got: tuple[Any, ...], want: tuple[Any, ...], where: str) -> None:
    assert len(got) == len(want), where
    for name, g, w in zip(ALL, got, want, strict=True):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w, err_msg=f"{where} field {name}")
        else:
            assert g == w, f"{where} field {name}"


def _read_all(stream: StreamingDataset, reference: Dataset) -> None:
    """`stream`'s epoch holds every sample once, each as `reference` reads it."""
    seen = []
    for sample in stream:
        i = sample[META]["k"]  # the sample's own number, stored in its JSON
        _assert_same_sample(sample, reference[i], f"sample {i}")
        seen.append(i)
    assert sorted(seen) == list(range(N))


def test_fields_stream_as_the_map_style_reader_reads_them(root: Path) -> None:
    transform = RandomResizedCrop(24)
    stream = StreamingDataset(root, fields=ALL, transform=transform, seed=6, shuffle_window=2)
    reference = Dataset(root, fields=ALL, transform=transform, seed=6)
    for epoch in (0, 1):  # the draws of a sample depend on (seed, epoch, index) only
        stream.set_epoch(epoch)
        reference.set_epoch(epoch)
        _read_all(stream, reference)
    plain = StreamingDataset(root)
    assert plain.fields == ("jpg", "cls")
    image, label = next(iter(StreamingDataset(root, shuffle=False)))
    assert image.ndim == 3
    assert label == Dataset(root).labels[0]
    assert len(next(iter(plain))) == 2


def test_collate_batches_as_the_map_style_reader_does(root: Path) -> None:
    fields = ("jpg", "seg.png", "boxes.npy", "txt", "cls")
    transform = RandomResizedCrop(16)
    stream = StreamingDataset(root, fields=fields, transform=transform, shuffle=False, pad=True)
    reference = Dataset(root, fields=fields, transform=transform, pad=True)
    loader = DataLoader(stream, batch_size=5, num_workers=2, collate_fn=stream.collate)
    total = 0
    for images, masks, boxes, texts, labels in loader:
        assert images.shape[1:] == (16, 16, 3)
        assert masks.shape == images.shape[:3]
        assert isinstance(boxes, Padded)
        assert boxes.values.shape[0] == len(labels) == len(texts)
        assert isinstance(texts, list)
        total += len(labels)
    assert total == N
    rows = list(range(6))  # one stream, no shuffle: the dataset's order
    batch = stream.collate([reference[i] for i in rows])
    expected = reference.__getitems__(rows)
    np.testing.assert_array_equal(batch[0], expected[0])
    np.testing.assert_array_equal(batch[2].values, expected[2].values)
    assert batch[3] == expected[3]
    full_size = Dataset(root, fields=("jpg",))
    assert full_size[0][0].shape != full_size[1][0].shape
    with pytest.raises(ValueError, match=r"batch: samples 0 and 1 have sizes .* field 'jpg'"):
        StreamingDataset(root, fields=("jpg",)).collate([full_size[0], full_size[1]])


def test_a_member_that_does_not_decode_names_the_sample(root: Path) -> None:
    reference = Dataset(root, fields=("meta.json",))
    path = root / reference.manifest.shards[1].name
    data = path.read_bytes()
    start = data.index(b'{"k":4')
    path.write_bytes(data[:start] + b"]" + data[start + 1 :])
    stream = StreamingDataset(root, fields=("cls", "meta.json"), shuffle=False)
    with pytest.raises(ShardFormatError, match=r"sample 4 \(key 000000004, shard 1\) field "
                       r"'meta.json' does not decode: a json member"):  # fmt: skip
        list(stream)


def _upload(root: Path, s3_server: S3Server, bucket: str) -> str:
    fs = s3_server.filesystem()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        fs.put_file(str(path), f"{bucket}/ds/{path.relative_to(root)}")
    return f"s3://{bucket}/ds"


def test_fields_stream_from_a_bucket_with_their_dictionaries(
    root: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    assert (root / "dicts" / "caption.txt.zst.zdict").is_file()
    url = _upload(root, s3_server, s3_bucket)
    options = s3_server.storage_options
    stream = StreamingDataset(url, fields=ALL, cache_dir=tmp_path / "cache",
                              storage_options=options, fetch=QUICK)  # fmt: skip
    assert (stream.root / "dicts" / "caption.txt.zst.zdict").read_bytes() == (
        root / "dicts" / "caption.txt.zst.zdict"
    ).read_bytes()
    _read_all(stream, Dataset(root, fields=ALL))
    copy = fetch_dataset(url, tmp_path / "copy", options)
    assert (copy / "dicts" / "caption.txt.zst.zdict").is_file()
    assert Dataset(copy, fields=("caption.txt.zst",))[5] == Dataset(root, fields=ALL)[5][7:8]
