"""What an append refuses, each with an error that names the file and what is wrong: options
other than the dataset's, a source of other fields or labels, a missing dataset, a dataset of
adopted shards, keys past the key width, an interrupted append not resumed."""

from __future__ import annotations

import dataclasses
import io
import json
import tarfile
from pathlib import Path

import pytest
from fastpack.compiler import AppendError, BuildOptions, SourceError, append
from fastpack.formats import DatasetNotFoundError, read_manifest, write_manifest

from tests.compiler._helpers import QUIET
from tests.compiler.append._datasets import file_states
from tests.conftest import jpeg_bytes


def test_options_other_than_the_dataset_s(dataset: Path, new_inputs: Path) -> None:
    before = file_states(dataset)
    with pytest.raises(
        AppendError,
        match=r"ds: an append takes the dataset's own options; shard_size=123 differs from "
        r"the dataset's shard_size=4000: leave it out",
    ):
        append(dataset, new_inputs, BuildOptions(shard_size=123, **QUIET))
    with pytest.raises(AppendError, match=r"max_side=20 differs from the dataset's max_side=48"):
        append(dataset, new_inputs, BuildOptions(max_side=20, **QUIET))
    with pytest.raises(
        AppendError, match=r"shard_format='tfrecord' differs from the dataset's shard_format='tar'"
    ):
        append(dataset, new_inputs, BuildOptions(shard_format="tfrecord", **QUIET))
    with pytest.raises(AppendError, match=r"an append runs on one machine; num_nodes=2"):
        append(dataset, new_inputs, BuildOptions(num_nodes=2, node_rank=0, **QUIET))
    assert file_states(dataset) == before  # refused before any file was written
    # the dataset's own values, given again, are no difference
    assert append(dataset, new_inputs, BuildOptions(shard_size=4000, **QUIET)).version == 2


def test_a_build_record_the_append_cannot_follow(dataset: Path, new_inputs: Path) -> None:
    manifest = read_manifest(dataset / "fastpack.json")
    odd = dataclasses.replace(manifest, build={**manifest.build, "sharpen": 2})
    write_manifest(dataset / "fastpack.json", odd)
    with pytest.raises(
        AppendError, match=r"ds: its manifest's 'build' records the options sharpen"
    ):
        append(dataset, new_inputs, BuildOptions(**QUIET))


def _wds_tar(path: Path) -> Path:
    """A webdataset tar whose samples have a `txt` member beside `jpg` and `cls`."""
    with tarfile.open(path, "w") as tar:
        for i in range(3):
            for ext, data in (("jpg", jpeg_bytes(30, 30, seed=i)), ("cls", b"1"), ("txt", b"hi")):
                info = tarfile.TarInfo(f"s{i}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def test_a_source_of_other_fields(dataset: Path, tmp_path: Path) -> None:
    source = _wds_tar(tmp_path / "other.tar")
    with pytest.raises(
        SourceError, match=r"other\.tar: its samples have the fields .*txt.*, the dataset's are"
    ):
        append(dataset, source, BuildOptions(**QUIET))
    assert not list((dataset / "versions").glob("*.partial"))  # nothing left to resume
    assert not (dataset / "append.lock").exists()


def test_integer_labels_into_a_dataset_of_class_names(dataset: Path, tmp_path: Path) -> None:
    (tmp_path / "img.jpg").write_bytes(jpeg_bytes(30, 30))
    listing = tmp_path / "list.csv"
    listing.write_text("path,label\nimg.jpg,3\n")
    with pytest.raises(
        SourceError,
        match=r"list\.csv: its labels are bare integers, the dataset's are class names "
        r"\(2 classes: cat, dog\)",
    ):
        append(dataset, listing, BuildOptions(**QUIET))


def test_a_missing_dataset(tmp_path: Path, new_inputs: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"nope: no such dataset directory"):
        append(tmp_path / "nope", new_inputs, BuildOptions(**QUIET))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetNotFoundError, match=r"empty/fastpack\.json: no manifest"):
        append(tmp_path / "empty", new_inputs, BuildOptions(**QUIET))


def test_a_dataset_of_adopted_shards(dataset: Path, new_inputs: Path) -> None:
    manifest = read_manifest(dataset / "fastpack.json")
    adopted = dataclasses.replace(manifest, version=3, adopted=True, schema=manifest.schema)
    write_manifest(dataset / "fastpack.json", adopted)
    with pytest.raises(
        AppendError, match=r"ds: its shards are adopted .*fastpack index.*not supported yet"
    ):
        append(dataset, new_inputs, BuildOptions(**QUIET))


def test_keys_past_the_key_width(dataset: Path, new_inputs: Path) -> None:
    manifest = read_manifest(dataset / "fastpack.json")
    full = dataclasses.replace(manifest, stats={**manifest.stats, "inputs": 999_999_997})
    write_manifest(dataset / "fastpack.json", full)
    with pytest.raises(
        SourceError,
        match=r"b: 6 inputs after the dataset's 999,999,997 would take keys up to 1000000002, "
        r"wider than the dataset's key_width of 9 digits",
    ):
        append(dataset, new_inputs, BuildOptions(**QUIET))


def test_an_interrupted_append_needs_resume(dataset: Path, new_inputs: Path) -> None:
    (dataset / "versions/000002.partial/.fastpack-build").mkdir(parents=True)
    with pytest.raises(
        AppendError,
        match=r"000002\.partial: holds an interrupted append of version 2; pass --resume",
    ):
        append(dataset, new_inputs, BuildOptions(**QUIET))
    assert not (dataset / "append.lock").exists()


def test_nothing_to_resume(dataset: Path, new_inputs: Path) -> None:
    with pytest.raises(AppendError, match=r"no interrupted append of version 2 to resume"):
        append(dataset, new_inputs, BuildOptions(resume=True, **QUIET))
    assert json.loads((dataset / "fastpack.json").read_text())["version"] == 1


def test_a_foreign_file_where_a_new_shard_goes(dataset: Path, new_inputs: Path) -> None:
    shards = len(read_manifest(dataset / "fastpack.json").shards)
    foreign = dataset / f"shards/{shards:06d}.tar"
    foreign.write_bytes(b"someone else's")
    with pytest.raises(
        AppendError,
        match=rf"shards/{shards:06d}\.tar: exists, and is not the staged 000000\.tar \(SHA-256 "
        r"[0-9a-f]{64}\): a file no version of the dataset lists; move it away",
    ):
        append(dataset, new_inputs, BuildOptions(workers=1, **QUIET))
    assert foreign.read_bytes() == b"someone else's"
    assert read_manifest(dataset / "fastpack.json").dataset_version == 1
    foreign.unlink()
    assert append(dataset, new_inputs, BuildOptions(resume=True, **QUIET)).version == 2
