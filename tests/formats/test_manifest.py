from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from fastpack.formats import (
    ChecksumMismatchError,
    DatasetNotFoundError,
    Manifest,
    ManifestError,
    ShardInfo,
    UnsupportedVersionError,
    read_manifest,
    write_manifest,
)
from fastpack.formats.manifest import (
    check_manifest_text,
    content_sha256,
    manifest_digest,
    manifest_from_text,
)
from fastpack.formats.schema import FileInfo


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
    with pytest.raises(UnsupportedVersionError, match=r"m.json: manifest version 4, .*\(1, 2, 3\)"):
        manifest_from_text(_text(version=4), "m.json")


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
    # a directory reads the manifest it holds, and names it when it holds none
    with pytest.raises(DatasetNotFoundError, match=f"{tmp_path / 'fastpack.json'}: no manifest"):
        read_manifest(tmp_path)


def test_a_dataset_directory_reads_its_manifest(tmp_path: Path) -> None:
    manifest = _manifest()
    write_manifest(tmp_path / "fastpack.json", manifest)
    assert read_manifest(tmp_path) == read_manifest(tmp_path / "fastpack.json") == manifest


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


def _sealed() -> Manifest:
    """The manifest with every checksum of SPEC section 2: DALI indexes, rejects, its own."""
    m = _manifest()
    shards = tuple(
        dataclasses.replace(s, index_bytes=100 + i, index_sha256=f"{i}" * 64)
        for i, s in enumerate(m.shards)
    )
    rejects = FileInfo(name="rejects.jsonl", bytes=60, sha256="d" * 64)
    return dataclasses.replace(m, shards=shards, rejects=rejects, checksum=True)


def test_every_checksum_round_trips_and_the_manifest_records_its_own() -> None:
    text = _sealed().to_json()
    data = json.loads(text)
    assert [(s["index_bytes"], s["index_sha256"]) for s in data["shards"]] == [
        (100, "0" * 64),
        (101, "1" * 64),
    ]
    assert data["rejects"] == {"name": "rejects.jsonl", "bytes": 60, "sha256": "d" * 64}
    del data["sha256"]
    without = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert json.loads(text)["sha256"] == hashlib.sha256(without.encode()).hexdigest()
    assert json.loads(text)["sha256"] == content_sha256(_sealed())
    back = check_manifest_text(text.encode(), "m.json")
    assert back == _sealed()
    assert manifest_digest(back) == hashlib.sha256(text.encode()).hexdigest()


def test_a_manifest_without_them_keeps_its_text() -> None:
    """Manifests written before the checksums: no key added, the same digest."""
    text = _manifest().to_json()
    assert not {"sha256", "rejects"} & set(json.loads(text))
    assert all("index_sha256" not in s for s in json.loads(text)["shards"])
    back = check_manifest_text(text.encode(), "m.json")
    assert (back.checksum, back.rejects, back.shards[0].index_sha256) == (False, None, None)
    assert back.to_json() == text


def _flipped(text: str, old: str, new: str) -> bytes:
    assert text.count(old) == 1, old
    return text.replace(old, new).encode()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"cat"', '"cau"', "its content's sha256 is [0-9a-f]{64}, it records [0-9a-f]{64}: "),
        ('"shard_size": 1000', '"shard_size": 1001', "its content's sha256 is"),
        ('"key_width": 9', '"key_width": 8', "its content's sha256 is"),
        ('"rejected": 1', '"rejected": 2', "its content's sha256 is"),
    ],
)
def test_a_changed_value_is_found_by_the_manifest_s_own_sha256(
    old: str, new: str, message: str
) -> None:
    text = _flipped(_sealed().to_json(), old, new)
    manifest_from_text(text, "m.json")  # a reader that only reads takes it
    with pytest.raises(ChecksumMismatchError, match=f"^m.json: {message}"):
        check_manifest_text(text, "m.json")


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ('\n  "classes"', '\n\t"classes"', r"\(line 5, column 1\) is b'\\t\"classes"),
        ('"num_samples": 5,\n', '"num_samples": 5,\x0b', "not valid JSON"),
        ('"dog"', '"\\u0064og"', r"\(line 7, column 6\) is b'\\\\u0064og"),
        ('"num_samples": 5', '"num_samples":05', "not valid JSON"),
        ('"key_width": 9', '"key_width": 9.0', "key 'key_width' should be int"),
        ('"sha256": "aaaa', '"sha256":  "aaaa', r"column 17\) is b' \"aaa"),
        ('"name": "index.fpx"', '"name": "index.fpx", "x": 1', r"column 25\) is b' \"x\": 1"),
    ],
)
def test_another_form_of_the_same_manifest_is_found(old: str, new: str, where: str) -> None:
    """Whitespace, escapes, number forms and unknown keys are not in what the manifest holds,
    so its own sha256 cannot see them: the canonical text does, in manifests old and new."""
    for manifest in (_manifest(), _sealed()):
        text = _flipped(manifest.to_json(), old, new)
        with pytest.raises(ManifestError, match=where):
            check_manifest_text(text, "m.json")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sha256", "A" * 64, "key 'sha256' is 'AAA"),
        ("sha256", 7, "key 'sha256' should be str"),
        ("rejects", {"name": "rejected.txt", "bytes": 1, "sha256": "e" * 64}, "rejects name"),
        ("rejects", {"name": "rejects.jsonl", "bytes": 1}, "rejects: missing key 'sha256'"),
    ],
)
def test_bad_checksum_keys(key: str, value: object, message: str) -> None:
    data = json.loads(_manifest().to_json())
    data[key] = value
    with pytest.raises(ManifestError, match=message):
        manifest_from_text(json.dumps(data), "m.json")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"index_bytes": 3}, "index_bytes and index_sha256 go together, found only index_bytes"),
        ({"index_sha256": "f" * 64}, "go together, found only index_sha256"),
        ({"index_bytes": -1, "index_sha256": "f" * 64}, "'index_bytes' is -1, expected >= 0"),
        ({"index_bytes": 3, "index_sha256": "xyz"}, "'index_sha256' is 'xyz', expected 64"),
    ],
)
def test_bad_dali_index_checksums(changes: dict[str, object], message: str) -> None:
    data = json.loads(_manifest().to_json())
    data["shards"][1].update(changes)
    with pytest.raises(ManifestError, match=rf"^m.json: shards\[1\]: .*{message}"):
        manifest_from_text(json.dumps(data), "m.json")


@pytest.mark.parametrize(
    ("key", "name", "problem"),
    [
        ("name", "shards/000000\x00.tar", "holds a control character"),
        ("name", "", "is empty"),
        ("index_name", "/etc/passwd", "is not a relative path of named parts"),
        ("name", "shards/../000000.tar", "is not a relative path of named parts"),
        ("name", "shards/" + "a" * 256, "has a part longer than 255 bytes"),
        ("index_name", "a/" * 600, "is longer than 1024 bytes"),
    ],
)
def test_a_shard_name_that_cannot_name_a_file_is_refused(key: str, name: str, problem: str) -> None:
    data = json.loads(_manifest().to_json())
    data["shards"][1][key] = name
    with pytest.raises(ManifestError, match=rf"^m.json: shards\[1\]: key '{key}' .*{problem}"):
        manifest_from_text(json.dumps(data), "m.json")
