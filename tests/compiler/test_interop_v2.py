"""Version-2 shards are plain webdataset tars: the `webdataset` library reads every field (images,
masks, `.npy` arrays, JSON, text, labels, raw bytes), `.zst` members decode with the few lines of
`zstd_handler`, and `tar` lists the members."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
import webdataset as wds
import zstandard
from fastpack.formats import DatasetFiles

from tests.formats._golden_v2 import NUM_SAMPLES, SCHEMA, mask, samples, write_golden_v2


def zstd_handler(dictionaries: Mapping[str, bytes]) -> Callable[[str, bytes], Any]:
    """A webdataset decode handler for fastpack's `.zst` members: each is one zstd frame, made
    with its field's dictionary if the manifest names one (`dictionaries`: field -> the bytes of
    `dicts/<field>.zdict`). It decompresses the frame and hands the inner member (`txt`,
    `json`, `npy`, ...) on to webdataset's own decoders:

        dataset = wds.WebDataset(urls).decode(zstd_handler({"txt.zst": dict_bytes}), "rgb8")
    """

    def handler(key: str, data: bytes) -> Any:  # key: "." + the member's extension
        if not key.endswith(".zst"):
            return None
        d = dictionaries.get(key[1:])
        dict_data = zstandard.ZstdCompressionDict(d) if d is not None else None
        plain = zstandard.ZstdDecompressor(dict_data=dict_data).decompress(data)
        return wds.autodecode.Continue(key[: -len(".zst")], plain)

    return handler


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> DatasetFiles:
    root = tmp_path_factory.mktemp("interop-v2") / "ds"
    write_golden_v2(root)
    return DatasetFiles(root)


def _dictionaries(ds: DatasetFiles) -> dict[str, bytes]:
    return {
        s.name: (ds.root / s.zstd.dictionary.name).read_bytes()
        for s in ds.manifest.schema.fields
        if s.zstd is not None and s.zstd.dictionary is not None
    }


def test_webdataset_decodes_every_field(dataset: DatasetFiles) -> None:
    urls = [str(dataset.shard_path(k)) for k in range(len(dataset.manifest.shards))]
    pipeline = wds.WebDataset(urls, shardshuffle=False).decode(
        zstd_handler(_dictionaries(dataset)), "rgb8"
    )
    got = list(pipeline)
    assert [s["__key__"] for s in got] == [f"{i:09d}" for i in range(NUM_SAMPLES)]
    for i, (sample, written) in enumerate(zip(got, samples(), strict=True)):
        assert set(sample) - {"__key__", "__url__", "__local_path__"} == set(written)
        assert sample["jpg"].shape == (16, 16, 3)
        assert sample["jpg"].dtype == np.uint8
        assert sample["cls"] == written["cls"]
        assert np.array_equal(sample["seg.png"][:, :, 0], mask(i))  # grey, as RGB
        assert sample["tags.json"] == written["tags.json"]
        assert sample["boxes.npy"].dtype == np.float32
        assert np.array_equal(sample["boxes.npy"], written["boxes.npy"])
        assert sample["txt"] == written["txt"]
        assert sample["caption.txt.zst"] == written["caption.txt.zst"]
        assert sample["bin"] == written["bin"]
        if i % 2 == 0:
            assert sample["meta.json.zst"] == written["meta.json.zst"]
        else:
            assert "meta.json.zst" not in sample  # absent member of an optional field


def test_tar_lists_the_members(dataset: DatasetFiles) -> None:
    listed = []
    for k in range(len(dataset.manifest.shards)):
        done = subprocess.run(
            ["tar", "-tvf", str(dataset.shard_path(k))], capture_output=True, text=True, check=True
        )
        rows = [line.split() for line in done.stdout.splitlines()]
        assert all(row[0] == "-rw-r--r--" and row[1] == "0/0" for row in rows)
        listed += [row[-1] for row in rows]
    expected = [
        f"{i:09d}.{f}" for i, sample in enumerate(samples()) for f in SCHEMA.names if f in sample
    ]
    assert listed == expected
