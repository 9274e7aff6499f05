"""`fastpack info` on a dataset grown by appends: every version with its samples and the shards
it added, the latest marked, `--version N` summing up that version; on a dataset of adopted
shards, where the shards lie."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from fastpack.formats import MANIFEST_NAME, VersionNotFoundError, read_manifest, write_manifest

from fastpack.cli import main
from fastpack.info import dataset_info

from .conftest import Versioned


def _shards(path: Path, version: str) -> int:
    return len(read_manifest(path / version).shards)


def test_info_lists_the_versions(
    versioned: Callable[..., Versioned],
    publish: Callable[[Path], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    v = versioned()
    counts = [_shards(v.path, f"versions/00000{k}/fastpack.json") for k in (1, 2, 3)]
    added = [counts[0], counts[1] - counts[0], counts[2] - counts[1]]
    assert main(["info", str(v.path)]) == 0
    out = capsys.readouterr().out
    assert "(format version 3, dataset version 3 of 3)" in out
    assert f"versions  1: {v.samples[0]} samples, {added[0]} shard" in out
    assert f"          2: {v.samples[1]} samples, {added[1]} shards added\n" in out
    assert f"          3: {v.samples[2]} samples, {added[2]} shards added (latest, shown)\n" in out
    assert f"samples   {v.samples[2]}\n" in out
    assert main(["info", str(v.path), "--version", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["dataset_version"], summary["samples"]) == (2, v.samples[1])
    assert summary["versions"] == [
        {"number": k + 1, "samples": v.samples[k], "shards_added": added[k], "latest": k == 2}
        for k in range(3)
    ]
    at_url = dataset_info(publish(v.path), version=1)
    assert (at_url.manifest.dataset_version, at_url.manifest.num_samples) == (1, v.samples[0])
    assert "1: " in at_url.format()
    assert "(shown)" in at_url.format()
    with pytest.raises(VersionNotFoundError, match="no version 4"):
        dataset_info(v.path, version=4)


def test_info_of_a_dataset_of_one_version_has_no_version_lines(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    (v.path / MANIFEST_NAME).write_bytes((v.path / "versions/000001/fastpack.json").read_bytes())
    info = dataset_info(v.path)
    assert info.versions == ()
    assert "versions" not in info.format()
    assert info.to_dict()["versions"] == []


def test_info_shows_where_adopted_shards_lie(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    first = read_manifest(v.path / "versions/000001/fastpack.json")
    adopted = replace(first, version=3, adopted=True, shard_root="../store", key_width=0)
    write_manifest(v.path / MANIFEST_NAME, adopted)
    info = dataset_info(v.path)
    store = str((v.path / ".." / "store").resolve())
    assert info.shard_root == store
    assert f"adopted   shards at {store} (shard_root ../store)" in info.format()
    assert info.to_dict()["shard_root"] == store
