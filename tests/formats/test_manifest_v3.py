"""Version 3 of the manifest (formats/SPEC.md sections 10 and 11): adopted shards and dataset
versions, written only where used, refused where misplaced, and versions read and checked."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fastpack.formats import (
    ChecksumMismatchError,
    DatasetNotFoundError,
    Manifest,
    ManifestError,
    ShardInfo,
    VersionInfo,
    VersionNotFoundError,
    read_dataset_manifest,
    write_manifest,
)
from fastpack.formats.layout import version_index_name, version_manifest_name
from fastpack.formats.manifest import manifest_from_text, version_for
from fastpack.formats.schema import V1_SCHEMA, FileInfo
from fastpack.formats.shard_root import resolve_shard_root


def _shard(i: int, samples: int) -> ShardInfo:
    return ShardInfo(
        name=f"shards/{i:06d}.tar",
        index_name=f"shards/{i:06d}.idx",
        samples=samples,
        bytes=4096,
        sha256=f"{i:x}" * 64,
    )


def _manifest(**changes: Any) -> Manifest:
    base = Manifest(
        version=1,
        num_samples=3,
        fields=V1_SCHEMA.names,
        classes=("cat",),
        key_width=9,
        shards=(_shard(0, 3),),
        index=FileInfo(name="index.fpx", bytes=1024, sha256="c" * 64),
        build={"shard_size": 1000},
        stats={"samples": 3, "inputs": 3, "rejected": 0},
    )
    return dataclasses.replace(base, **changes)


def _adopted(**changes: Any) -> Manifest:
    return _manifest(version=3, schema=V1_SCHEMA, adopted=True, key_width=0, **changes)


def _grown(version1: Manifest, text1: bytes) -> Manifest:
    """Version 2 of the dataset whose version 1 is `version1` (written as `text1`)."""
    return dataclasses.replace(
        version1,
        version=3,
        dataset_version=2,
        versions=(
            VersionInfo(
                number=1,
                name=version_manifest_name(1),
                bytes=len(text1),
                sha256=hashlib.sha256(text1).hexdigest(),
                num_samples=version1.num_samples,
            ),
        ),
        num_samples=5,
        shards=(*version1.shards, _shard(1, 2)),
        index=FileInfo(name=version_index_name(2), bytes=2048, sha256="d" * 64),
    )


def test_plain_manifests_keep_their_text() -> None:
    text = _manifest().to_json()
    for key in ("adopted", "shard_root", "dataset_version", "versions"):
        assert key not in json.loads(text)
    assert version_for(V1_SCHEMA) == 1
    assert version_for(V1_SCHEMA, extended=True) == 3


def test_adopted_round_trip() -> None:
    manifest = _adopted(shard_root="../tars")
    data = json.loads(manifest.to_json())
    assert (data["version"], data["adopted"], data["shard_root"]) == (3, True, "../tars")
    assert manifest_from_text(manifest.to_json(), "m.json") == manifest


def test_versions_round_trip(tmp_path: Path) -> None:
    v1 = _manifest()
    v2 = _grown(v1, v1.to_json().encode())
    data = json.loads(v2.to_json())
    assert data["dataset_version"] == 2
    assert data["versions"][0]["name"] == "versions/000001/fastpack.json"
    assert data["index"]["name"] == "versions/000002/index.fpx"
    assert manifest_from_text(v2.to_json(), "m.json") == v2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 2, "adopted": True}, r"version 2 with adopted shards or appends"),
        ({"version": 3, "schema": V1_SCHEMA}, r"version 3 with neither"),
        ({"version": 3, "schema": V1_SCHEMA, "shard_root": "/x"}, r"'shard_root' without"),
        (
            {"version": 3, "schema": V1_SCHEMA, "adopted": True, "shard_root": "a\nb"},
            r"is not a path or URL",
        ),
        ({"version": 3, "schema": V1_SCHEMA, "dataset_version": 2}, r"'versions' lists \[\]"),
    ],
)
def test_misplaced_version_3_keys_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        _manifest(**changes)


def test_a_v2_text_with_a_v3_key_is_refused() -> None:
    data = json.loads(_manifest().to_json())
    data["adopted"] = True
    with pytest.raises(ManifestError, match=r"m.json: manifest: version 1 with adopted shards"):
        manifest_from_text(json.dumps(data), "m.json")


def test_a_later_version_names_its_own_index() -> None:
    v1 = _manifest()
    data = json.loads(_grown(v1, v1.to_json().encode()).to_json())
    data["index"]["name"] = "index.fpx"
    with pytest.raises(ManifestError, match=r"index name 'index.fpx', expected "):
        manifest_from_text(json.dumps(data), "m.json")


@pytest.mark.parametrize(
    ("dataset", "root", "expected"),
    [
        ("/data/ds", None, "/data/ds"),
        ("/data/ds", "../tars", "/data/tars"),
        ("/data/ds", "/mnt/tars", "/mnt/tars"),
        ("/data/ds", "file:///mnt/my%20tars", "/mnt/my tars"),
        ("/data/ds", "s3://bucket/tars/", "s3://bucket/tars"),
        ("s3://bucket/index/ds", "../../tars", "s3://bucket/tars"),
        ("s3://bucket/ds/", None, "s3://bucket/ds"),
    ],
)
def test_shard_root_resolution(dataset: str, root: str | None, expected: str) -> None:
    assert resolve_shard_root(dataset, root) == expected


def _two_versions(tmp_path: Path) -> tuple[Manifest, Manifest]:
    v1 = _manifest()
    text1 = v1.to_json().encode()
    (tmp_path / "versions" / "000001").mkdir(parents=True)
    (tmp_path / version_manifest_name(1)).write_bytes(text1)
    v2 = _grown(v1, text1)
    write_manifest(tmp_path / "fastpack.json", v2)
    return v1, v2


def test_read_each_version(tmp_path: Path) -> None:
    v1, v2 = _two_versions(tmp_path)
    assert read_dataset_manifest(tmp_path) == v2
    assert read_dataset_manifest(tmp_path, 2) == v2
    assert read_dataset_manifest(tmp_path, 1) == v1


@pytest.mark.parametrize("version", [0, 3, -1])
def test_a_missing_version_names_those_there_are(tmp_path: Path, version: int) -> None:
    _two_versions(tmp_path)
    with pytest.raises(VersionNotFoundError, match=rf"no version {version}; .* versions 1 to 2"):
        read_dataset_manifest(tmp_path, version)


def test_a_damaged_earlier_version_is_refused(tmp_path: Path) -> None:
    _two_versions(tmp_path)
    path = tmp_path / version_manifest_name(1)
    path.write_bytes(path.read_bytes().replace(b'"cat"', b'"cow"'))
    with pytest.raises(ChecksumMismatchError, match=r"000001/fastpack.json: .* for version 1"):
        read_dataset_manifest(tmp_path, 1)
    path.unlink()
    with pytest.raises(DatasetNotFoundError, match=r"manifest of version 1 is missing"):
        read_dataset_manifest(tmp_path, 1)
