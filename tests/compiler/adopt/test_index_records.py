"""`index_shards` over TFRecord files written by TensorFlow, and over fastpack's own record
shards: the dataset reads each record's image and label in place."""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, IndexOptions, build, index_shards
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.formats import DatasetFiles, read_manifest
from fastpack.formats.tfrecord import HEADER_BYTES
from fastpack.reader import (
    CenterCrop,
    Dataset,
    StreamingDataset,
    make_dali_loader,
    verify_dataset,
    verify_remote,
)
from fastpack.storage import Location

from tests.conftest import jpeg_bytes
from tests.s3_server import S3Server

from .conftest import decode, digests

ONE = IndexOptions(workers=1)
N, PER_FILE = 10, 5


# TensorFlow's own writer and Example message, in a process of its own (TensorFlow is slow to
# import and starts threads): stdin is {path: [[image as base64, label], ...]}.
TF_WRITER = """
import base64, json, sys
import tensorflow as tf
def one(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
for path, samples in json.load(sys.stdin).items():
    with tf.io.TFRecordWriter(path) as writer:
        for image, label in samples:
            features = {
                "image/encoded": one(base64.b64decode(image)),
                "image/format": one(b"jpeg"),
                "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "image/class/text": one(("class %d" % label).encode()),
            }
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())
"""


@pytest.fixture
def records(tmp_path: Path) -> Path:
    """N Examples (image of seed i, label i) in two files written by `tf.io.TFRecordWriter`."""
    folder = tmp_path / "records"
    folder.mkdir()
    spec = {
        str(folder / f"train-{f:05d}-of-00002.tfrecord"): [
            [base64.b64encode(jpeg_bytes(32, 40, seed=i)).decode(), i]
            for i in range(f * PER_FILE, (f + 1) * PER_FILE)
        ]
        for f in range(N // PER_FILE)
    }
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    subprocess.run(
        [sys.executable, "-c", TF_WRITER], input=json.dumps(spec), text=True, check=True, env=env
    )
    return folder


def test_tensorflow_records_indexed_in_place(records: Path, tmp_path: Path) -> None:
    before = digests(records)
    out = tmp_path / "out"
    summary = index_shards([records], out, IndexOptions(workers=2))
    assert (summary.samples, summary.shards, summary.rejected) == (N, 2, 0)
    assert digests(records) == before
    manifest = read_manifest(out / "fastpack.json")
    assert (manifest.shard_format, manifest.adopted, manifest.version) == ("tfrecord", True, 3)
    assert manifest.schema.names == ("jpg", "cls")
    files = DatasetFiles(out)
    assert files.index.key(6) == "train-00001-of-00002.tfrecord#1"
    assert files.index.source(6) == files.index.key(6)
    with Dataset(out) as ds:
        for i in range(N):
            image, label = ds[i]
            assert int(label) == i
            np.testing.assert_array_equal(image, decode(jpeg_bytes(32, 40, seed=i)))
    loader = make_dali_loader(
        out, batch_size=5, transform=CenterCrop(24, resize=32), shuffle=False, num_workers=1
    )
    with loader:
        labels = [int(v) for _, batch in loader for v in batch]
    assert labels == list(range(N))
    idx = (out / "shards" / "000000.idx").read_text().splitlines()
    assert len(idx) == PER_FILE
    assert idx[0].startswith("0 ")
    report = verify_dataset(out, decode=True)
    assert report.ok, report.format()


def test_a_damaged_record_is_rejected_and_the_rest_kept(records: Path, tmp_path: Path) -> None:
    path = records / "train-00000-of-00002.tfrecord"
    data = bytearray(path.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 0)
    second = HEADER_BYTES + length + 4
    data[second + HEADER_BYTES + 40] ^= 0xFF  # inside record 1's data: its CRC no longer matches
    path.write_bytes(bytes(data))
    out = tmp_path / "out"
    summary = index_shards([records], out, ONE)
    assert (summary.samples, summary.rejected) == (N - 1, 1)
    (line,) = (out / "rejects.jsonl").read_text().splitlines()
    assert json.loads(line) == {
        "path": "train-00000-of-00002.tfrecord#1",
        "reason": f"record at byte {second}: data CRC mismatch",
    }
    assert DatasetFiles(out).index.label.tolist() == [i for i in range(N) if i != 1]
    report = verify_dataset(out)
    assert report.ok, report.format()


def test_a_schema_takes_bytes_features_as_fields(records: Path, tmp_path: Path) -> None:
    schema = parse_build_schema(
        [
            {"name": "jpg", "type": "jpeg", "column": "image/encoded"},
            {"name": "cls", "type": "class", "column": "image/class/label"},
            {"name": "txt", "type": "text", "column": "image/class/text"},
        ],
        "schema",
    )
    out = tmp_path / "out"
    index_shards([records], out, IndexOptions(workers=1, schema=schema))
    with Dataset(out, fields=("jpg", "cls", "txt")) as ds:
        assert ds[3][2] == "class 3"
    assert verify_dataset(out, decode=True).ok


def test_fastpack_record_shards_indexed_elsewhere(
    make_image_folder: object, tmp_path: Path
) -> None:
    source = make_image_folder(classes=3, per_class=3, size=40)  # type: ignore[operator]
    built = tmp_path / "built"
    options = BuildOptions(workers=1, shard_size=20_000, progress=False, shard_format="tfrecord")
    build(source, built, options)
    out = tmp_path / "out"
    index_shards([built / "shards"], out, IndexOptions(workers=1, format="tfrecord"))
    built_files, files = DatasetFiles(built), DatasetFiles(out)
    assert [files.index.key(i) for i in range(len(files))] == [
        built_files.index.key(i) for i in range(len(built_files))
    ]  # the `fastpack/key` feature
    assert files.index.source(0) == f"000000.tfrecord#{files.index.key(0)}"
    with Dataset(built) as a, Dataset(out) as b:
        assert len(a) == len(b)
        for i in range(len(a)):
            np.testing.assert_array_equal(a[i][0], b[i][0])
            assert int(a[i][1]) == int(b[i][1])
    assert verify_dataset(out, decode=True).ok


def test_a_feature_of_numbers_cannot_be_a_member(records: Path, tmp_path: Path) -> None:
    schema = parse_build_schema(
        [
            {"name": "jpg", "type": "jpeg", "column": "image/encoded"},
            {"name": "ids", "type": "class_ids", "column": "image/class/label"},
        ],
        "schema",
    )
    out = tmp_path / "out"
    summary = index_shards([records], out, IndexOptions(workers=1, schema=schema))
    assert (summary.samples, summary.rejected) == (0, N)
    first = json.loads((out / "rejects.jsonl").read_text().splitlines()[0])
    assert first == {
        "path": "train-00000-of-00002.tfrecord#0",
        "field": "ids",
        "reason": "feature 'image/class/label' holds 1 int64 values, expected one bytes value; "
        "`fastpack index` stores bytes values in place only: use `fastpack build`",
    }


def test_a_cut_off_file_keeps_its_whole_records(records: Path, tmp_path: Path) -> None:
    path = records / "train-00001-of-00002.tfrecord"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])  # inside the last record
    out = tmp_path / "out"
    summary = index_shards([records], out, ONE)
    assert (summary.samples, summary.rejected) == (N - 1, 1)
    entry = json.loads((out / "rejects.jsonl").read_text())
    assert entry["path"] == f"train-00001-of-00002.tfrecord#{PER_FILE - 1}"
    assert "cut off at byte" in entry["reason"]
    assert entry["reason"].endswith("the rest of the shard is left out")
    assert verify_dataset(out).ok


def test_records_at_a_url(
    records: Path, tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    options = s3_server.storage_options
    url = f"s3://{s3_bucket}/records"
    location = Location(url, options)
    for path in sorted(records.iterdir()):
        location.upload(path, path.name)
    out = f"s3://{s3_bucket}/index"
    index_shards([f"{url}/"], out, IndexOptions(workers=2, storage_options=options))
    with StreamingDataset(out, storage_options=options, cache_dir=tmp_path / "cache") as ds:
        found = {int(label): image for image, label in ds}
    assert sorted(found) == list(range(N))
    np.testing.assert_array_equal(found[7], decode(jpeg_bytes(32, 40, seed=7)))
    report = verify_remote(out, options)
    assert report.ok, report.format()
