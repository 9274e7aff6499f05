"""The `webdataset` library reads the shards the compiler writes: same keys, bytes and labels."""

from __future__ import annotations

from pathlib import Path

import pytest
import webdataset as wds
from fastpack.compiler import BuildOptions, build
from fastpack.formats import DatasetFiles

from tests.compiler._helpers import StoredSample, read_dataset
from tests.compiler.test_rejects import hostile_folder
from tests.conftest import jpeg_bytes


def build_mixed(root: Path, restart_width: int = 0) -> Path:
    """A shuffled dataset of several shards with kept, converted and rejected inputs (stored
    with restart markers `restart_width` px apart where it is not 0)."""
    source = hostile_folder(root / "src")
    for i in range(14):
        (source / f"k{i % 2}").mkdir(exist_ok=True)
        (source / f"k{i % 2}" / f"{i}.jpg").write_bytes(jpeg_bytes(30 + 3 * i, 70, seed=50 + i))
    out = root / "out"
    options = BuildOptions(
        workers=2,
        shard_size=6000,
        shuffle_seed=3,
        max_side=60,
        restart_width=restart_width,
        progress=False,
    )
    build(source, out, options)
    return out


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[StoredSample]]:
    out = build_mixed(tmp_path_factory.mktemp("interop"))
    return out, read_dataset(out)


def test_webdataset_reads_every_sample(mixed: tuple[Path, list[StoredSample]]) -> None:
    out, expected = mixed
    files = DatasetFiles(out)
    urls = [str(files.shard_path(i)) for i in range(len(files.manifest.shards))]
    assert len(urls) > 3
    got = [(s["__key__"], s["jpg"], s["cls"]) for s in wds.WebDataset(urls, shardshuffle=False)]
    assert got == [(s.key, s.jpg, s.cls) for s in expected]
    assert [int(cls) for _, _, cls in got] == [s.label for s in expected]


def test_webdataset_decodes_to_tuples(mixed: tuple[Path, list[StoredSample]]) -> None:
    out, expected = mixed
    files = DatasetFiles(out)
    urls = [str(files.shard_path(i)) for i in range(len(files.manifest.shards))]
    pipeline = wds.WebDataset(urls, shardshuffle=False).decode("rgb8").to_tuple("jpg", "cls")
    decoded = list(pipeline)
    assert len(decoded) == len(expected)
    assert all(image.ndim == 3 and image.shape[2] == 3 for image, _ in decoded)
    assert [label for _, label in decoded] == [s.label for s in expected]
