"""`verify_dataset` (and `verify_remote`) on a dataset of several versions: every version's files
checked, a damaged earlier manifest, index or latest-manifest copy reported by name, an earlier
version whose shards are not the next one's first reported, views made on any version accepted;
a fetched copy of the dataset holds every version."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from fastpack.formats import read_manifest, write_manifest
from fastpack.reader import Dataset, fetch_dataset, verify_dataset, verify_remote

from fastpack.view_build import build_views, save_views

from .conftest import Versioned


def test_a_dataset_of_three_versions_verifies(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    for version in (1, 3):
        save_views(v.path, build_views(v.path, f"half-{version}", fraction=0.5, version=version))
    report = verify_dataset(v.path)
    assert report.ok, report.format()
    assert report.views_checked == 2


def test_a_damaged_earlier_manifest_is_reported(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    path = v.path / "versions/000001/fastpack.json"
    path.write_bytes(path.read_bytes().replace(b'"classes": [', b'"classes":  ['))
    report = verify_dataset(v.path)
    text = report.format()
    assert "versions/000001/fastpack.json (version 1's manifest, as the latest records it)" in text
    assert "the manifest records" in text
    assert "canonical" in text


def test_a_damaged_earlier_index_is_reported(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    index = v.path / "versions/000002/index.fpx"
    data = bytearray(index.read_bytes())
    data[-1] ^= 0xFF
    index.write_bytes(bytes(data))
    problems = verify_dataset(v.path).problems
    assert any(
        "versions/000002/index.fpx: sha256" in p and "the manifest of version 2's index" in p
        for p in problems
    ), problems
    first = v.path / "index.fpx"  # version 1's, the build's
    first.write_bytes(first.read_bytes()[:-8])
    problems = verify_dataset(v.path).problems
    assert any("index.fpx: " in p and "version 1's index records" in p for p in problems), problems


def test_a_latest_copy_that_differs_is_reported(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    copy = v.path / "versions/000003/fastpack.json"
    copy.write_bytes(copy.read_bytes() + b"\n")
    problems = verify_dataset(v.path).problems
    assert problems == [
        f"{copy}: not the bytes of {v.path / 'fastpack.json'}, the latest version's manifest"
    ]
    copy.unlink()
    problems = verify_dataset(v.path).problems
    assert problems == [f"{copy}: file not found (the latest manifest's copy)"]


def test_an_earlier_version_that_is_no_prefix_is_reported(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    path = v.path / "versions/000002/fastpack.json"
    second = read_manifest(path)
    changed = replace(second.shards[1], sha256="0" * 64)
    write_manifest(path, replace(second, shards=(second.shards[0], changed, *second.shards[2:])))
    latest = json.loads((v.path / "fastpack.json").read_text())
    problems = verify_dataset(v.path).problems
    assert any("version 2's manifest, as the latest records it" in p for p in problems), problems
    assert any(
        "version 3's shards do not begin with version 2's" in p and "(shard 1 differs" in p
        for p in problems
    ), problems
    assert latest["versions"][1]["name"] == "versions/000002/fastpack.json"


def test_verify_remote_checks_every_version(
    versioned: Callable[..., Versioned], publish: Callable[[Path], str]
) -> None:
    v = versioned()
    save_views(v.path, build_views(v.path, "early", fraction=0.5, version=1))
    report = verify_remote(publish(v.path))
    assert report.ok, report.format()
    assert (report.samples_checked, report.views_checked) == (v.samples[-1], 1)
    index = v.path / "versions/000002/index.fpx"
    data = bytearray(index.read_bytes())
    data[-1] ^= 0xFF
    index.write_bytes(bytes(data))
    url = publish(v.path)
    recorded = read_manifest(v.path / "versions/000002/fastpack.json").index.sha256
    assert verify_remote(url).problems == [
        f"{url}/versions/000002/index.fpx: sha256 {hashlib.sha256(data).hexdigest()}, the "
        f"manifest of version 2's index records {recorded}"
    ]


def test_a_fetched_copy_holds_every_version(
    versioned: Callable[..., Versioned], publish: Callable[[Path], str], tmp_path: Path
) -> None:
    v = versioned()
    copy = fetch_dataset(publish(v.path), tmp_path / "copy")
    report = verify_dataset(copy)
    assert report.ok, report.format()
    for number, keys in enumerate(v.keys, start=1):
        ds = Dataset(copy, version=number)
        assert tuple(ds.key(i) for i in range(len(ds))) == keys
