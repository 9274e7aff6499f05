from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from fastpack.formats import (
    DatasetNotFoundError,
    FileInfo,
    Manifest,
    ManifestError,
    ShardInfo,
    UnsupportedVersionError,
    manifest_from_text,
    read_manifest,
    write_manifest,
)


def _manifest() -> Manifest:
    return Manifest(
        num_samples=5,
        fields=("jpg", "cls"),
        classes=("cat", "dog"),
        key_width=9,
        shards=(
            ShardInfo(
                name="shards/000000.tar",
                index_name="shards/000000.idx",
                samples=3,
                bytes=4096,
                sha256="a" * 64,
            ),
            ShardInfo(
                name="shards/000001.tar",
                index_name="shards/000001.idx",
                samples=2,
                bytes=2048,
                sha256="b" * 64,
            ),
        ),
        index=FileInfo(name="index.fpx", bytes=1024, sha256="c" * 64),
        build={"shard_size": 1000},
        stats={"samples": 5, "rejected": 1},
    )


def test_round_trip_is_canonical(tmp_path: Path) -> None:
    path = tmp_path / "fastpack.json"
    write_manifest(path, _manifest())
    text = path.read_text()
    assert read_manifest(path) == _manifest()
    assert text == _manifest().to_json()
    assert text.endswith("}\n")
    data = json.loads(text)
    assert (data["format"], data["version"]) == ("fastpack", 1)
    assert list(data) == sorted(data)
    assert [p.name for p in tmp_path.iterdir()] == ["fastpack.json"]


def _text(**changes: object) -> str:
    data = json.loads(_manifest().to_json())
    data.update(changes)
    return json.dumps(data)


def test_unknown_version() -> None:
    with pytest.raises(UnsupportedVersionError, match=r"m.json: manifest version 3, .* \(1, 2\)"):
        manifest_from_text(_text(version=3), "m.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "m.json: not valid JSON"),
        ("[]", "m.json: expected a JSON object, found list"),
        (_text(format="other"), "m.json: 'format' is 'other', expected 'fastpack'"),
        (_text(num_samples=6), "m.json: shards hold 5 samples, 'num_samples' says 6"),
        (_text(num_samples="5"), "m.json: key 'num_samples' should be int, found str"),
        (_text(num_samples=True), "m.json: key 'num_samples' should be int, found bool"),
        (_text(shards=[{"name": "x"}]), r"m.json: shards\[0\]: missing key 'index_name'"),
        (_text(index={"name": "other.fpx", "bytes": 1, "sha256": ""}), "index name 'other.fpx'"),
    ],
)
def test_bad_manifests(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        manifest_from_text(text, "m.json")


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no manifest; not a fastpack dataset"):
        read_manifest(tmp_path / "fastpack.json")


def _v2_text(**changes: object) -> str:
    """The v1 manifest above as version 2 (schema of its fields), with `changes`."""
    data = json.loads(_manifest().to_json())
    data.update(
        version=2, schema=[{"name": "jpg", "type": "jpeg"}, {"name": "cls", "type": "class"}]
    )
    data.update(changes)
    return json.dumps(data)


def test_shard_format_tfrecord_round_trips_and_tar_is_left_out() -> None:
    records = manifest_from_text(_v2_text(shard_format="tfrecord"), "m.json")
    assert (records.version, records.shard_format) == (2, "tfrecord")
    assert json.loads(records.to_json())["shard_format"] == "tfrecord"
    tar = manifest_from_text(_v2_text(), "m.json")
    assert tar.shard_format == "tar"
    assert "shard_format" not in tar.to_json()  # tar manifests are what they were before
    assert manifest_from_text(_v2_text(shard_format="tar"), "m.json") == tar


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _v2_text(shard_format="zip"),
            r"m.json: manifest: shard_format 'zip', expected one of tar",
        ),
        (_v2_text(shard_format=1), "m.json: key 'shard_format' should be str, found int"),
        (_text(shard_format="tfrecord"), "version 1 has tar shards only"),
    ],
)
def test_bad_shard_formats(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        manifest_from_text(text, "m.json")


def test_a_shard_s_crc32c_round_trips_and_is_left_out_when_absent() -> None:
    with_crc = dataclasses.replace(
        _manifest(),
        shards=tuple(
            dataclasses.replace(s, crc32c=0xFFFFFFFF - i) for i, s in enumerate(_manifest().shards)
        ),
    )
    data = json.loads(with_crc.to_json())
    assert [s["crc32c"] for s in data["shards"]] == [0xFFFFFFFF, 0xFFFFFFFE]
    assert manifest_from_text(with_crc.to_json(), "m.json") == with_crc
    assert all("crc32c" not in s for s in json.loads(_manifest().to_json())["shards"])
    assert manifest_from_text(_manifest().to_json(), "m.json").shards[0].crc32c is None


@pytest.mark.parametrize("value", [-1, 2**32, "12", 1.5, True])
def test_a_crc32c_that_is_not_an_unsigned_32_bit_int_is_refused(value: object) -> None:
    data = json.loads(_manifest().to_json())
    data["shards"][1]["crc32c"] = value
    with pytest.raises(ManifestError, match=r"^m.json: shards\[1\]: key 'crc32c' should be"):
        manifest_from_text(json.dumps(data), "m.json")
