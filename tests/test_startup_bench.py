"""The start-up benchmark's synthetic datasets: valid for the normal reader, payloads real."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.formats import INDEX_NAME, Index, read_manifest
from fastpack.formats.checksum import file_sha256
from fastpack.formats.layout import sample_key
from fastpack.formats.string_table import pack_strings
from fastpack.reader import Dataset, RandomResizedCrop

from benchmarks.startup._index import sample_keys, synthetic_dataset

ROWS = 10_007  # not a multiple of the base: the last repetition stops inside a shard


@pytest.fixture
def base(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """A real dataset of 15 JPEGs in several shards."""
    out = tmp_path / "base"
    source = make_image_folder(classes=3, per_class=5)
    build(source, out, BuildOptions(workers=1, shard_size=40_000, progress=False))
    return out


def test_sample_keys_match_sample_key() -> None:
    blob, offsets = sample_keys(995, 10, 9)
    expected_blob, expected_offsets = pack_strings(sample_key(i, 9) for i in range(995, 1005))
    assert bytes(blob) == bytes(expected_blob)
    assert offsets.tolist() == expected_offsets.tolist()


def test_synthetic_dataset_repeats_the_base(base: Path, tmp_path: Path) -> None:
    real = Dataset(base)
    rows, shards = len(real), len(real.manifest.shards)
    assert shards >= 2
    out = synthetic_dataset(base, tmp_path / "big", ROWS)
    ds = Dataset(out, transform=RandomResizedCrop(32))
    assert len(ds) == ROWS
    assert len({ds.key(i) for i in range(ROWS)}) == ROWS
    assert [ds.key(i) for i in (0, rows, ROWS - 1)] == [f"{i:09d}" for i in (0, rows, ROWS - 1)]
    assert np.array_equal(ds.labels, np.resize(np.asarray(real.labels), ROWS))
    for i in (0, rows - 1, rows, 5 * rows + 3, ROWS - 1):
        assert bytes(ds.read_bytes(i)) == bytes(real.read_bytes(i % rows))
        assert ds.source(i) == real.source(i % rows)
    shard_column = np.asarray(Index(out / INDEX_NAME).shard)
    assert np.all(np.diff(shard_column.astype(np.int64)) >= 0)
    manifest = read_manifest(out / "fastpack.json")
    assert len(manifest.shards) == int(shard_column[-1]) + 1 > shards * (ROWS // rows)
    for info in (manifest.shards[0], manifest.shards[-1]):
        assert file_sha256(out / info.name) == info.sha256
    images, labels = ds.__getitems__(list(range(64)))
    assert images.shape == (64, 32, 32, 3)
    assert labels.tolist() == np.resize(np.asarray(real.labels), 64).tolist()


def test_synthetic_dataset_is_reused(base: Path, tmp_path: Path) -> None:
    out = synthetic_dataset(base, tmp_path / "big", ROWS)
    written = (out / INDEX_NAME).stat().st_mtime_ns
    assert synthetic_dataset(base, out, ROWS) == out
    assert (out / INDEX_NAME).stat().st_mtime_ns == written
    synthetic_dataset(base, out, 2 * ROWS)
    assert len(Dataset(out)) == 2 * ROWS
