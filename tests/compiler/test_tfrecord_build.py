"""`--shard-format tfrecord`: the same samples as a tar build, in TFRecord shards with DALI's
tfrecord2idx index, byte-identical across worker counts, resumable, and read by TensorFlow."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.build_schema import read_build_schema
from fastpack.formats import ABSENT, DatasetFiles, read_manifest
from fastpack.formats.tfrecord import RecordSpan, parse_record_index, scan_records

from fastpack.cli import main
from tests.compiler._fields import (
    read_fields,
    sample_values,
    write_files,
    write_jsonl,
    write_schema,
)
from tests.compiler._helpers import QUIET, read_dataset, tree_bytes
from tests.compiler.test_fields_build import check_equal
from tests.compiler.test_resume import interrupted

RECORDS = BuildOptions(shard_format="tfrecord", workers=1, shard_size=3000, **QUIET)


def test_tar_and_tfrecord_builds_hold_the_same_samples_in_the_same_order(
    tmp_path: Path, make_image_folder: Callable[..., Path]
) -> None:
    source = make_image_folder(classes=3, per_class=5)
    build(source, tmp_path / "tar", BuildOptions(workers=1, shard_size=3000, **QUIET))
    build(source, tmp_path / "rec", RECORDS)
    tar, rec = read_dataset(tmp_path / "tar"), read_dataset(tmp_path / "rec")
    assert len(rec) == 15
    assert [(s.key, s.jpg, s.label, s.source) for s in rec] == [
        (s.key, s.jpg, s.label, s.source) for s in tar
    ]
    manifest = read_manifest(tmp_path / "rec/fastpack.json")
    assert (manifest.version, manifest.shard_format) == (2, "tfrecord")
    assert len(manifest.shards) > 2
    assert all(s.name.endswith(".tfrecord") for s in manifest.shards)
    assert "shard_format" not in (tmp_path / "tar/fastpack.json").read_text()


def test_each_record_shard_is_whole_records_listed_by_its_dali_index(
    tmp_path: Path, make_image_folder: Callable[..., Path]
) -> None:
    source = make_image_folder(classes=2, per_class=4)
    build(source, tmp_path / "rec", RECORDS)
    files = DatasetFiles(tmp_path / "rec")
    index = files.index
    first = 0
    for number, shard in enumerate(files.manifest.shards):
        data = (tmp_path / "rec" / shard.name).read_bytes()
        spans = list(scan_records(data))
        assert all(isinstance(s, RecordSpan) for s in spans)
        assert len(spans) == shard.samples
        listed = parse_record_index(
            (tmp_path / "rec" / shard.index_name).read_text(), shard.index_name
        )
        assert listed == [(s.offset, s.end - s.offset) for s in spans if isinstance(s, RecordSpan)]
        assert sum(size for _, size in listed) == len(data) == shard.bytes
        for i, span in enumerate(spans):  # each sample's fields lie in its own record's data
            assert isinstance(span, RecordSpan)
            assert int(index.shard[first + i]) == number
            for name in files.manifest.fields:
                offset, size = (
                    int(index.offsets(name)[first + i]),
                    int(index.sizes(name)[first + i]),
                )
                assert span.data_offset <= offset
                assert offset + size <= span.data_offset + span.size
        first += shard.samples


def test_worker_count_does_not_change_a_byte(
    tmp_path: Path, make_image_folder: Callable[..., Path]
) -> None:
    source = make_image_folder(classes=3, per_class=6)
    trees = []
    for workers in (1, 3):
        out = tmp_path / f"out{workers}"
        options = BuildOptions(
            shard_format="tfrecord",
            workers=workers,
            shard_size=3000,
            shuffle_seed=3,
            max_side=48,
            **QUIET,
        )
        build(source, out, options)
        trees.append(tree_bytes(out))
    assert len(trees[0]) > 6
    assert trees[0] == trees[1]


def test_multi_field_samples_read_back_equal_from_records(tmp_path: Path) -> None:
    samples = [sample_values(i) for i in range(6)]
    write_files(tmp_path / "src", samples)
    listing = write_jsonl(tmp_path / "src/list.jsonl", samples)
    schema = read_build_schema(write_schema(tmp_path / "schema.json"))
    out = tmp_path / "out"
    build(
        listing,
        out,
        BuildOptions(schema=schema, shard_format="tfrecord", workers=1, shard_size=4000, **QUIET),
    )
    check_equal(read_fields(out), samples, tmp_path / "src")
    index = DatasetFiles(out).index
    absent = [int(v) == ABSENT for v in index.offsets("note.txt")]
    assert absent == ["note" not in s for s in samples]


def test_a_resume_finishes_records_and_refuses_another_shard_format(tmp_path: Path) -> None:
    source, out = interrupted(tmp_path)  # a tar build stopped at its fifth input
    with pytest.raises(BuildError, match=r"cannot resume: .*shard_format"):
        build(
            source, out, BuildOptions(shard_format="tfrecord", shard_size=1, resume=True, **QUIET)
        )
    clean_tar = tmp_path / "clean-tar"
    build(source, out, BuildOptions(workers=2, shard_size=1, resume=True, **QUIET))
    build(source, clean_tar, BuildOptions(workers=1, shard_size=1, **QUIET))
    assert tree_bytes(out) == tree_bytes(clean_tar)

    (source / "c0" / "0012.jpg").write_bytes(b"")
    rec = tmp_path / "rec"
    strict = BuildOptions(shard_format="tfrecord", workers=1, shard_size=1, strict=True, **QUIET)
    with pytest.raises(BuildError, match=r"c0/0012\.jpg: empty file"):
        build(source, rec, strict)
    assert sorted(p.suffix for p in (rec / "shards").iterdir()) == [".idx"] * 4 + [".tfrecord"] * 4
    first = (rec / "shards/000000.tfrecord").read_bytes()
    (rec / "shards/000000.tfrecord").write_bytes(first[:-1])  # a finished shard cut short
    build(
        source,
        rec,
        BuildOptions(shard_format="tfrecord", workers=2, shard_size=1, resume=True, **QUIET),
    )
    clean = tmp_path / "clean-rec"
    build(source, clean, BuildOptions(shard_format="tfrecord", workers=1, shard_size=1, **QUIET))
    assert tree_bytes(rec) == tree_bytes(clean)


def test_cli_shard_format_and_info(
    tmp_path: Path, make_image_folder: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_image_folder(classes=2, per_class=2)
    out = tmp_path / "out"
    assert (
        main(["build", str(source), str(out), "--shard-format", "tfrecord", "--no-progress"]) == 0
    )
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["000000.idx", "000000.tfrecord"]
    assert main(["info", str(out)]) == 0
    assert "shard_format=tfrecord" in capsys.readouterr().out
    # a shell's expansion of `shards/*.tfrecord`: several sources, read in the order given
    tfrecords = sorted(str(p) for p in (out / "shards").glob("*.tfrecord")) * 2
    again = tmp_path / "again"
    assert main(["build", *tfrecords, str(again), "--no-progress"]) == 0
    assert len(read_dataset(again)) == 2 * len(read_dataset(out))
    assert main(["build", str(source), str(tmp_path / "x"), "--shard-format", "zip"]) == 2
    assert "invalid choice: 'zip'" in capsys.readouterr().err
    with pytest.raises(BuildError, match="shard_format='zip'"):
        BuildOptions(shard_format="zip")  # type: ignore[arg-type]


TF_READER = """
import json, sys
import tensorflow as tf
files, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
spec = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/format": tf.io.FixedLenFeature([], tf.string),
    "image/height": tf.io.FixedLenFeature([], tf.int64),
    "image/width": tf.io.FixedLenFeature([], tf.int64),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
    "fastpack/key": tf.io.FixedLenFeature([], tf.string),
}
spec.update({name: tf.io.FixedLenFeature([], tf.string, default_value=b"") for name in names})
out = []
for record in tf.data.TFRecordDataset(files):
    p = tf.io.parse_single_example(record, spec)
    image = tf.io.decode_jpeg(p["image/encoded"])
    row = {k: (v.numpy().hex() if v.dtype == tf.string else int(v)) for k, v in p.items()}
    row["decoded_shape"] = list(image.shape)
    out.append(row)
print(json.dumps(out))
"""


def read_with_tensorflow(out: Path, names: list[str]) -> list[dict[str, Any]]:
    """Every record of a dataset's shards as TensorFlow parses it, in a separate process (TF
    is not imported into the test process)."""
    manifest = read_manifest(out / "fastpack.json")
    files = [str(out / s.name) for s in manifest.shards]
    done = subprocess.run(
        [sys.executable, "-c", TF_READER, json.dumps(files), json.dumps(names)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    for row in rows:
        for key, value in row.items():
            if isinstance(value, str):
                row[key] = bytes.fromhex(value)
    return rows


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="TensorFlow (test extra) not installed"
)
def test_tensorflow_reads_every_record_of_a_build(tmp_path: Path) -> None:
    samples = [sample_values(i) for i in range(5)]
    write_files(tmp_path / "src", samples)
    listing = write_jsonl(tmp_path / "src/list.jsonl", samples)
    schema = read_build_schema(write_schema(tmp_path / "schema.json"))
    out = tmp_path / "out"
    build(
        listing,
        out,
        BuildOptions(
            schema=schema, shard_format="tfrecord", workers=1, shard_size=4000, max_side=30, **QUIET
        ),
    )
    names = ["fastpack/txt", "fastpack/seg.png", "fastpack/note.txt", "fastpack/boxes.npy"]
    rows = read_with_tensorflow(out, names)
    stored = read_fields(out)
    index = DatasetFiles(out).index
    assert len(rows) == len(samples) == len(stored)
    for i, (row, got, s) in enumerate(zip(rows, stored, samples, strict=True)):
        assert row["image/encoded"] == got["jpg"]
        assert row["image/format"] == b"jpeg"
        assert row["image/class/label"] == s["label"]
        assert [row["image/height"], row["image/width"]] == row["decoded_shape"][:2]
        assert max(row["decoded_shape"][:2]) <= 30  # shrunk by max_side, size from the new image
        assert row["fastpack/key"].decode() == index.key(i)
        assert row["fastpack/txt"].decode() == s["caption"]
        assert row["fastpack/note.txt"].decode() == s.get("note", "")
        assert row["fastpack/seg.png"] == got["seg.png"]  # the PNG as stored
        boxes = np.load(io.BytesIO(row["fastpack/boxes.npy"]))
        np.testing.assert_array_equal(boxes, got["boxes.npy"])
