"""`append()`: a built dataset grown twice, in tar and TFRecord shards; each version's files,
keys, classes, rejects and stats; the earlier versions' files untouched."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.append import append
from fastpack.formats import read_manifest
from fastpack.formats.versions import read_dataset_manifest

from tests.compiler._helpers import QUIET
from tests.compiler.append._datasets import file_states, image_folder, samples


def _check_files(ds: Path, before: dict[str, tuple[str, int]], v1_text: bytes) -> None:
    """Not a byte of version 1's files rewritten (nor their mtimes) but `fastpack.json`,
    version 1's manifest kept as it was, version 2's that of the latest."""
    after = file_states(ds)
    assert {k: v for k, v in after.items() if k in before and k != "fastpack.json"} == {
        k: v for k, v in before.items() if k != "fastpack.json"
    }
    assert (ds / "versions/000001/fastpack.json").read_bytes() == v1_text
    latest = (ds / "fastpack.json").read_bytes()
    assert (ds / "versions/000002/fastpack.json").read_bytes() == latest


@pytest.mark.parametrize("shard_format", ["tar", "tfrecord"])
def test_two_appends_make_versions_2_and_3(tmp_path: Path, shard_format: str) -> None:
    ds = tmp_path / "ds"
    first = image_folder(tmp_path / "a", {"cat": 5, "dog": 4})
    options = BuildOptions(workers=1, shard_size=4000, max_side=48, **QUIET)
    build(first, ds, dataclasses.replace(options, shard_format=shard_format))  # type: ignore[arg-type]
    v1_text = (ds / "fastpack.json").read_bytes()
    v1 = samples(ds)
    before = file_states(ds)

    second = image_folder(tmp_path / "b", {"dog": 3, "eel": 2}, seed=1)
    (second / "eel" / "broken.jpg").write_bytes(b"not a jpeg")
    summary = append(ds, second, BuildOptions(workers=1, **QUIET))
    assert summary.version == 2
    assert (summary.added.inputs, summary.added.samples, summary.added.rejected) == (6, 5, 1)
    assert summary.samples == 14
    _check_files(ds, before, v1_text)

    m2 = read_manifest(ds / "fastpack.json")
    assert (m2.version, m2.dataset_version) == (3, 2)
    assert m2.classes == ("cat", "dog", "eel")
    assert m2.index.name == "versions/000002/index.fpx"
    assert m2.build == read_dataset_manifest(ds, 1).build
    assert m2.versions[0].name == "versions/000001/fastpack.json"
    assert m2.stats["inputs"] == 15
    assert m2.stats["samples"] == 14
    assert m2.stats["rejected"] == 1
    v2 = samples(ds, 2)
    assert v2[: len(v1)] == v1  # version 1's samples, same numbers, same rows
    new = v2[len(v1) :]
    assert [k for k, *_ in new] == [f"{9 + p:09d}" for p in range(5)]  # eel/broken.jpg: p=5
    names = dict(enumerate(m2.classes))
    assert sorted(names[label] for _, _, label, _ in new) == ["dog"] * 3 + ["eel"] * 2
    assert samples(ds, 1) == v1  # version 1 still opens, from its own manifest

    third = image_folder(tmp_path / "c", {"ant": 2, "cat": 1}, seed=2)
    (third / "ant" / "empty.jpg").write_bytes(b"")
    summary = append(ds, third, BuildOptions(workers=2, **QUIET))
    m3 = read_manifest(ds / "fastpack.json")
    assert summary.version == m3.dataset_version == 3
    assert m3.classes == ("cat", "dog", "eel", "ant")
    assert [v.number for v in m3.versions] == [1, 2]
    assert m3.shards[: len(m2.shards)] == m2.shards
    keys = [k for k, *_ in samples(ds)]
    assert len(set(keys)) == len(keys) == 17
    assert keys[-3:] == [f"{15 + p:09d}" for p in (0, 1, 3)]  # ant/empty.jpg (p=2) rejected
    lines = (ds / "versions/000003/rejects.jsonl").read_text().splitlines()
    assert [json.loads(line)["path"] for line in lines] == ["eel/broken.jpg", "ant/empty.jpg"]
    assert m3.stats["rejected"] == 2
    assert m3.stats["inputs"] == 19
    assert samples(ds, 2) == v2
    assert not list((ds / "versions").glob("*.partial"))
    assert not (ds / "append.lock").exists()
