"""The readers' contract (test_contract.py) over a dataset indexed in place by `fastpack index`
from tars that `webdataset.ShardWriter` wrote: map-style mmap and pread, streaming from a local
directory and from the S3 server, and DALI in CPU mode (which reads such a dataset through its
fed path); and map-style over the same tars indexed into another directory (a shard root).

Every sample has its own class, as in test_contract.py, and pixels are compared with the tar
members decoded directly (`full_decode` reads them through the index).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import webdataset
from fastpack.compiler import IndexOptions, index_shards
from fastpack.formats import MANIFEST_NAME, read_manifest
from fastpack.storage import Location

from tests.conftest import jpeg_bytes

from . import test_contract as contract
from .test_contract import N

PER_SHARD = 4


def write_adopted(folder: Path) -> Path:
    """N samples (label k: sample k, 48 x 48 JPEGs) in tars written by webdataset.ShardWriter
    into `folder`, indexed beside them."""
    folder.mkdir(parents=True)
    pattern = str(folder / "shard-%04d.tar")
    with webdataset.ShardWriter(pattern, maxcount=PER_SHARD, verbose=0) as writer:
        for k in range(N):
            writer.write(
                {"__key__": f"img{k}", "jpg": jpeg_bytes(48, 48, seed=k), "cls": b"%d" % k}
            )
    index_shards([folder], folder, IndexOptions(workers=1))
    return folder


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = write_adopted(tmp_path / "adopted")
    manifest = read_manifest(root / MANIFEST_NAME)
    assert manifest.adopted
    assert len(manifest.shards) == N // PER_SHARD
    return root


class TestMapStyleMmap(contract.TestMapStyleMmap):
    pass


class TestMapStylePread(contract.TestMapStylePread):
    pass


class TestStreamingLocal(contract.TestStreamingLocal):
    pass


class TestDaliCpu(contract.TestDaliCpu):
    pass


class TestMapStyleShardRoot(contract.TestMapStyleMmap):
    """The tars indexed into a directory of their own: the manifest's shard root names them."""

    @pytest.fixture
    def root(self, dataset: Path, tmp_path: Path) -> Path:
        self.shards = dataset
        out = tmp_path / "index-elsewhere"
        index_shards([sorted(dataset.glob("*.tar"))[0].parent], out, IndexOptions(workers=1))
        assert read_manifest(out / MANIFEST_NAME).shard_root == "../adopted"
        return out

    def remove(self, root: Path, name: str) -> None:
        (self.shards / name).unlink()


class TestStreamingS3(contract.TestStreamingS3):
    """Every file of the indexed dataset (the tars beside it) put at a URL."""

    prefix = "adopted"

    def republish(self, root: Path, dataset: Path) -> None:
        location = Location(self.url, self.server.storage_options)
        files = sorted(p for p in dataset.rglob("*") if p.is_file() and p.name != MANIFEST_NAME)
        for path in [*files, dataset / MANIFEST_NAME]:
            location.upload(path, path.relative_to(dataset).as_posix())
