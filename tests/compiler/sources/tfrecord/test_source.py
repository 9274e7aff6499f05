"""TFRecord files of `tf.train.Example`s as a build source: records written by TensorFlow itself
(in a subprocess, so that TensorFlow is never imported here) and by fastpack's own writers,
TensorFlow's ImageNet layout, a schema mapping other features, PNG images, text labels, and a
fastpack record dataset's shards giving their samples back."""

from __future__ import annotations

import base64
import concurrent.futures
import importlib.util
import io
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.compiler.sources import LeftOutWarning, SourceOptions
from fastpack.formats import FieldSpec, Schema, read_manifest, read_records
from fastpack.formats.example import encode_example
from fastpack.formats.layout import sample_key
from fastpack.formats.tfrecord import RecordShardWriter, format_record_index, write_file
from fastpack.reader import Dataset

from tests.compiler._fields import read_fields
from tests.compiler.sources._scans import image_bytes, resolved, scan_all
from tests.conftest import jpeg_bytes, png_bytes

OPTIONS_KW: dict[str, Any] = {"workers": 1, "shard_size": 4000, "progress": False}
OPTIONS = BuildOptions(**OPTIONS_KW)
IMAGES = [jpeg_bytes(24 + 8 * (i % 3), 32 + 8 * (i % 2), seed=i) for i in range(10)]
LABELS = [(7 * i) % 5 + 1 for i in range(10)]  # ImageNet's labels start at 1

# Writes the records of a JSON spec on stdin: {path: [{feature: [kind, values]}]}, bytes values
# in base64, with TensorFlow's own writer and Example message.
TF_WRITER = """
import base64, json, sys
import tensorflow as tf
LISTS = {
    "bytes": lambda v: tf.train.Feature(bytes_list=tf.train.BytesList(
        value=[base64.b64decode(x) for x in v])),
    "int64": lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v)),
    "float": lambda v: tf.train.Feature(float_list=tf.train.FloatList(value=v)),
}
for path, records in json.load(sys.stdin).items():
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            features = {name: LISTS[kind](values) for name, (kind, values) in record.items()}
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())
"""

Record = dict[str, tuple[str, list[Any]]]  # feature name -> (kind, values)


def write_with_tensorflow(files: dict[Path, list[Record]]) -> None:
    """Write each file's records with `tf.io.TFRecordWriter`, in a subprocess."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed (pip install tensorflow-cpu)")
    spec = {
        str(path): [
            {
                name: [kind, [base64.b64encode(v).decode() for v in values]]
                if kind == "bytes"
                else [kind, values]
                for name, (kind, values) in record.items()
            }
            for record in records
        ]
        for path, records in files.items()
    }
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", TF_WRITER],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"the TensorFlow writer failed:\n{done.stderr[-3000:]}")


def example_bytes(features: Sequence[tuple[str, bytes | int]]) -> bytes:
    """A serialized Example by fastpack's encoder: one bytes value or one int64 per feature."""
    encoded = encode_example([(name.encode(), value) for name, value in features])
    return b"".join(bytes(part) for part in encoded.parts)


def write_records(path: Path, payloads: Sequence[bytes]) -> Path:
    """A TFRecord file of `payloads`, framed by fastpack's writer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        write_file(file, payloads)
    return path


def imagenet_features(i: int) -> list[tuple[str, bytes | int]]:
    """Sample `i` as TensorFlow's ImageNet conversion writes it."""
    return [
        ("image/height", 24 + 8 * (i % 3)),
        ("image/width", 32 + 8 * (i % 2)),
        ("image/colorspace", b"RGB"),
        ("image/channels", 3),
        ("image/class/label", LABELS[i]),
        ("image/class/synset", b"n0144%04d" % i),
        ("image/format", b"JPEG"),
        ("image/filename", b"img%d.JPEG" % i),
        ("image/encoded", IMAGES[i]),
    ]


def tf_record(features: Sequence[tuple[str, bytes | int]]) -> Record:
    return {
        name: ("int64", [value]) if isinstance(value, int) else ("bytes", [value])
        for name, value in features
    }


def record_offsets(path: Path) -> list[int]:
    return [span.offset for span, _ in read_records(path)]


def field_record(i: int) -> Record:
    """Sample `i` with features beyond the image and label, for a schema to map."""
    boxes = [1.5, 2.0, 10.25, 12.0] * (i % 3)
    record: Record = {
        "image/encoded": ("bytes", [IMAGES[i]]),
        "image/class/label": ("int64", [i % 3]),
        "image/caption": ("bytes", [f"a photo of thing {i}".encode()]),
        "image/object/bbox": ("float", boxes),
        "image/object/class/label": ("int64", [i % 5, (7 * i) % 11]),
        "score": ("float", [0.5 * i]),
        "meta": ("bytes", [json.dumps({"i": i}).encode()]),
        "image/filename": ("bytes", [b"img%d.jpg" % i]),
    }
    if i % 2:
        record["note"] = ("bytes", [f"note {i}".encode()])
    return record


@pytest.fixture(scope="module")
def tf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every TensorFlow-written source of these tests, written by one subprocess."""
    root = tmp_path_factory.mktemp("tf")
    imagenet = [tf_record(imagenet_features(i)) for i in range(10)]
    imagenet[3]["image/object/bbox/xmin"] = ("float", [0.1, 0.5])
    texts = [b"dog", b"cat", b"owl", b"cat"]
    write_with_tensorflow(
        {
            root / "imagenet/train.tfrecord-00000-of-00002": imagenet[:6],
            root / "imagenet/train.tfrecord-00001-of-00002": imagenet[6:],
            root / "fields/data.tfrecord": [field_record(i) for i in range(6)],
            root / "png/p.tfrecord": [
                {
                    "image/encoded": ("bytes", [png_bytes(20, 16, seed=i)]),
                    "image/format": ("bytes", [b"png"]),
                    "image/class/label": ("int64", [i]),
                }
                for i in range(3)
            ],
            root / "text/t.tfrecords": [
                {"image/encoded": ("bytes", [IMAGES[i]]), "image/class/text": ("bytes", [t])}
                for i, t in enumerate(texts)
            ],
        }
    )
    return root


def test_tensorflow_records_build_in_record_order(tf_dir: Path, tmp_path: Path) -> None:
    """ImageNet's layout: `image/encoded` kept byte for byte as `jpg`, `image/class/label` as
    `cls`, in file then record order; each sample's source names its file and record offset."""
    source, out = tf_dir / "imagenet", tmp_path / "out"
    with pytest.warns(LeftOutWarning) as caught:
        summary = build(source, out, OPTIONS)
    messages = [str(w.message) for w in caught if w.category is LeftOutWarning]
    assert len(messages) == 2  # where each new feature first appears
    assert messages[0].startswith(
        f"{source}/train.tfrecord-00000-of-00002: record at byte 0: features "
        "'image/class/synset', 'image/filename' feed no field"
    )
    assert "'image/object/bbox/xmin'" in messages[1]
    assert not any("image/format" in m or "image/height" in m for m in messages)
    assert (summary.samples, summary.rejected) == (10, 0)
    names = sorted(p.name for p in source.iterdir())
    expected_sources = [
        f"{name}:{offset}" for name in names for offset in record_offsets(source / name)
    ]
    with Dataset(out) as dataset:
        assert [bytes(dataset.read_bytes(i)) for i in range(len(dataset))] == IMAGES
        assert dataset.labels.tolist() == LABELS
        assert [dataset.source(i) for i in range(len(dataset))] == expected_sources
        image, label = dataset[4]
        assert image.shape == (24 + 8 * (4 % 3), 32, 3)
        assert label == LABELS[4]
    manifest = read_manifest(out / "fastpack.json")
    assert (manifest.version, manifest.fields) == (1, ("jpg", "cls"))
    assert manifest.build["source_kind"] == "tfrecord"


def test_rows_are_byte_ranges_of_the_files(tf_dir: Path, tmp_path: Path) -> None:
    """The scan records where each image lies in its file: the jobs read it by offset."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeftOutWarning)
        scan, rows = scan_all(tf_dir / "imagenet", tmp_path / "work")
    assert scan.kind == "tfrecord"
    assert scan.containers == (
        "train.tfrecord-00000-of-00002",
        "train.tfrecord-00001-of-00002",
    )
    assert [r.container for r in rows] == [0] * 6 + [1] * 4
    assert [image_bytes(scan, r) for r in rows] == IMAGES
    assert [r.label for r in rows] == LABELS
    assert all(r.fields == b"" for r in rows)


SCHEMA: list[dict[str, Any]] = [
    {"name": "jpg", "type": "jpeg", "column": "image/encoded"},
    {"name": "cls", "type": "class", "column": "image/class/label"},
    {"name": "txt", "type": "text", "column": "image/caption"},
    {
        "name": "boxes.npy",
        "type": "ndarray",
        "dtype": "<f4",
        "shape": [None, 4],
        "column": "image/object/bbox",
    },
    {"name": "ids.json", "type": "class_ids", "column": "image/object/class/label"},
    {"name": "score.npy", "type": "ndarray", "column": "score"},
    {"name": "meta.json", "type": "json", "column": "meta"},
    {"name": "note.txt", "type": "text", "optional": True, "column": "note"},
]


def test_schema_maps_features_to_fields(tf_dir: Path, tmp_path: Path) -> None:
    """Bytes features as references into the file, int64 and float lists inline: text, a float
    list nested into boxes of float32, class ids, float64 scores, JSON, an optional field."""
    schema = parse_build_schema({"fields": SCHEMA, "unnamed": "drop"}, "test schema")
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeftOutWarning)  # image/filename: dropped in silence
        summary = build(tf_dir / "fields", out, BuildOptions(schema=schema, **OPTIONS_KW))
    assert (summary.samples, summary.rejected) == (6, 0)
    samples = read_fields(out)
    for i, sample in enumerate(samples):
        assert sample["jpg"] == IMAGES[i]
        assert (sample["cls"], sample["label"]) == (i % 3, i % 3)
        assert sample["txt"] == f"a photo of thing {i}"
        boxes = sample["boxes.npy"]
        assert boxes.dtype == np.float32
        assert boxes.tolist() == [[1.5, 2.0, 10.25, 12.0]] * (i % 3)
        assert boxes.shape == (i % 3, 4)
        assert sample["ids.json"].tolist() == [i % 5, (7 * i) % 11]
        assert sample["score.npy"].tolist() == [0.5 * i]
        assert sample["meta.json"] == {"i": i}
        assert sample.get("note.txt") == (f"note {i}" if i % 2 else None)


def test_schema_kind_mismatch_is_named(tf_dir: Path, tmp_path: Path) -> None:
    """A feature the first records hold as numbers cannot feed a text field: said at once."""
    fields = [
        {"name": "jpg", "type": "jpeg"},
        {"name": "txt", "type": "text", "column": "score"},
    ]
    schema = parse_build_schema(fields, "test schema")
    with pytest.raises(
        ValueError, match=r"schema field 'txt' \(text\): its feature 'score' holds float"
    ):
        build(tf_dir / "fields", tmp_path / "out", BuildOptions(schema=schema, **OPTIONS_KW))


def test_png_records_make_a_png_field(tf_dir: Path, tmp_path: Path) -> None:
    """`image/format` png: the image is a `png` field, kept as it is."""
    out = tmp_path / "out"
    build(tf_dir / "png", out, OPTIONS)
    manifest = read_manifest(out / "fastpack.json")
    assert [(f.name, f.type) for f in manifest.schema.fields] == [("png", "png"), ("cls", "class")]
    samples = read_fields(out)
    assert [s["png"] for s in samples] == [png_bytes(20, 16, seed=i) for i in range(3)]
    assert [s["label"] for s in samples] == [0, 1, 2]


def test_text_labels_become_class_names(tf_dir: Path, tmp_path: Path) -> None:
    """A bytes label feature (named by the schema; the image field without a column takes
    `image/encoded`) is numbered by its sorted names."""
    fields = [
        {"name": "jpg", "type": "jpeg"},
        {"name": "cls", "type": "class", "column": "image/class/text"},
    ]
    schema = parse_build_schema(fields, "test schema")
    out = tmp_path / "out"
    build(tf_dir / "text/t.tfrecords", out, BuildOptions(schema=schema, **OPTIONS_KW))
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.classes == ("cat", "dog", "owl")
    with Dataset(out) as dataset:
        assert dataset.labels.tolist() == [1, 0, 2, 0]
        assert [bytes(dataset.read_bytes(i)) for i in range(4)] == IMAGES[:4]


def test_fastpack_written_records_from_one_file(tmp_path: Path) -> None:
    """Records framed by `write_file` with Examples from `encode_example`, one file given."""
    path = write_records(
        tmp_path / "src/train.tfrecord", [example_bytes(imagenet_features(i)) for i in range(10)]
    )
    out = tmp_path / "out"
    with pytest.warns(LeftOutWarning, match="'image/class/synset', 'image/filename'"):
        summary = build(path, out, OPTIONS)
    assert summary.samples == 10
    with Dataset(out) as dataset:
        assert [bytes(dataset.read_bytes(i)) for i in range(10)] == IMAGES
        assert dataset.labels.tolist() == LABELS
        assert dataset.source(1) == f"train.tfrecord:{record_offsets(path)[1]}"


def test_records_without_labels_make_an_unlabeled_dataset(tmp_path: Path) -> None:
    path = write_records(
        tmp_path / "a.tfrecord", [example_bytes([("image/encoded", IMAGES[i])]) for i in range(3)]
    )
    scan, rows = scan_all(path, tmp_path / "work")
    assert scan.schema.names == ("jpg",)
    assert [r.label for r in rows] == [-1, -1, -1]


RECORD_SCHEMA = Schema(
    (
        FieldSpec(name="jpg", type="jpeg"),
        FieldSpec(name="cls", type="class"),
        FieldSpec(name="txt", type="text"),
        FieldSpec(name="meta.json", type="json"),
        FieldSpec(name="boxes.npy", type="ndarray", dtype="<f4", shape=(None, 4)),
        FieldSpec(name="note.txt", type="text", optional=True),
    )
)


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def record_members(i: int) -> list[tuple[str, bytes]]:
    """Sample `i`'s members, as a fastpack shard job hands them to a shard writer."""
    members = [
        ("jpg", IMAGES[i]),
        ("cls", str(i % 4).encode()),
        ("txt", f"caption {i}".encode()),
        ("meta.json", json.dumps({"i": i}).encode()),
        ("boxes.npy", npy(np.full((i % 3, 4), i, np.float32))),
    ]
    if i % 2:
        members.append(("note.txt", f"note {i}".encode()))
    return members


def test_fastpack_record_shards_give_their_samples_back(tmp_path: Path) -> None:
    """The shards of a fastpack record dataset (SPEC 4.2) as a source: `fastpack/<field>`
    features become their fields, typed by extension, optional where some records lack them;
    the image's size and format and the key are left out without a warning."""
    shards = tmp_path / "dataset/shards"
    shards.mkdir(parents=True)
    for shard in range(2):
        with (shards / f"{shard:06d}.tfrecord").open("wb") as file:
            writer = RecordShardWriter(file, RECORD_SCHEMA)
            for i in range(5 * shard, 5 * shard + 5):
                writer.add_sample(sample_key(i, 2), record_members(i))
        (shards / f"{shard:06d}.idx").write_text(format_record_index(writer.records))
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeftOutWarning)
        build(shards, out, OPTIONS)
    manifest = read_manifest(out / "fastpack.json")
    assert [(f.name, f.type, f.optional) for f in manifest.schema.fields] == [
        ("jpg", "jpeg", False),
        ("cls", "class", False),
        ("boxes.npy", "ndarray", False),
        ("meta.json", "json", False),
        ("note.txt", "text", True),
        ("txt", "text", False),
    ]
    samples = read_fields(out)
    for i, sample in enumerate(samples):
        members = dict(record_members(i))
        assert sample["jpg"] == members["jpg"]
        assert sample["label"] == i % 4
        assert sample["txt"] == f"caption {i}"
        assert sample["meta.json"] == {"i": i}
        assert sample["boxes.npy"].tolist() == np.full((i % 3, 4), i, np.float32).tolist()
        assert sample.get("note.txt") == (f"note {i}" if i % 2 else None)


def test_scan_fields_point_into_the_file(tmp_path: Path) -> None:
    """Every bytes field is a reference to its value's bytes in the record's file."""
    path = tmp_path / "shard.tfrecord"
    with path.open("wb") as file:
        writer = RecordShardWriter(file, RECORD_SCHEMA)
        for i in range(4):
            writer.add_sample(sample_key(i, 1), record_members(i))
    options = SourceOptions()
    scan, rows = scan_all(path, tmp_path / "work", options)
    for i, row in enumerate(rows):
        members = dict(record_members(i))
        values = resolved(scan, row)
        assert values == {name: members[name] for name in values}
        assert set(values) == set(members) - {"jpg", "cls"}
        assert image_bytes(scan, row) == IMAGES[i]


def test_damaged_tensorflow_records_are_rejected(tf_dir: Path, tmp_path: Path) -> None:
    """A TensorFlow-written file with a record's data damaged and its end cut off: both are
    rejects, named by file and offset, and the other records are built."""
    name = "train.tfrecord-00000-of-00002"
    original = tf_dir / "imagenet" / name
    spans = [span for span, _ in read_records(original)]
    data = bytearray(original.read_bytes())
    data[spans[1].data_offset + spans[1].size // 2] ^= 0xFF
    source = tmp_path / "src" / name
    source.parent.mkdir()
    source.write_bytes(bytes(data[: spans[5].offset + 50]))
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeftOutWarning)
        summary = build(source, out, OPTIONS)
    rejects = [
        json.loads(line)["path"] for line in (out / "rejects.jsonl").read_text().splitlines()
    ]
    assert rejects == [f"{name}:{spans[1].offset}", f"{name}:{spans[5].offset}"]
    assert (summary.samples, summary.rejected) == (4, 2)
    with Dataset(out) as dataset:
        assert [bytes(dataset.read_bytes(i)) for i in range(4)] == [IMAGES[i] for i in (0, 2, 3, 4)]
        assert dataset.labels.tolist() == [LABELS[i] for i in (0, 2, 3, 4)]


@pytest.mark.parametrize(("workers", "pools"), [(1, 0), (2, 1), (None, 1)])
def test_the_scan_uses_the_builds_worker_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int | None, pools: int
) -> None:
    """`--workers 1` scans the files in the build's own process; more, in a pool of that size."""
    import fastpack.compiler.sources.tfrecord.source as tfrecord_source  # noqa: PLC0415 -- under test: the module the test patches

    made: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    def counted(processes: int, **kwargs: Any) -> Any:
        made.append(processes)
        return real(processes, **kwargs)

    monkeypatch.setattr(tfrecord_source, "ProcessPoolExecutor", counted)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    for f in range(3):
        write_records(tmp_path / f"src/{f}.tfrecord", [example_bytes(imagenet_features(f))])
    summary = build(
        tmp_path / "src", tmp_path / "out", BuildOptions(workers=workers, progress=False)
    )
    assert summary.samples == 3
    assert len(made) == pools
    assert all(n == 2 for n in made)
