"""`index_shards` over shards at a URL (the S3 server) and on a network file system (sshfs):
each shard streamed once, nothing written beside the shards, the dataset read where it lies."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from fastpack.compiler import IndexOptions, SourceError, index_shards
from fastpack.formats import DatasetFiles, DatasetNotFoundError, read_manifest
from fastpack.reader import Dataset, StreamingDataset, verify_dataset, verify_remote
from fastpack.storage import Location

from fastpack.info import dataset_info
from tests.network_fs import NetworkFs
from tests.s3_server import S3Server

from .conftest import decode, digests, tar_members, write_tars


def _upload(folder: Path, location: Location) -> None:
    for path in sorted(folder.iterdir()):
        location.upload(path, path.name)


def _objects(location: Location) -> dict[str, int]:
    return dict(location.walk())


def test_tars_at_a_url_indexed_at_another_url(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    options = s3_server.storage_options
    src = write_tars(tmp_path / "tars", 12)
    prefix = f"s3://{s3_bucket}/run-{uuid.uuid4().hex[:8]}"
    shards = Location(f"{prefix}/tars", options)
    _upload(src, shards)
    before = _objects(shards)
    out = f"{prefix}/index"
    summary = index_shards(
        [f"{prefix}/tars/"], out, IndexOptions(workers=2, storage_options=options)
    )
    assert (summary.samples, summary.shards) == (12, 3)
    assert _objects(shards) == before
    written = _objects(Location(out, options))
    assert sorted(written) == [
        "fastpack.json",
        "index.fpx",
        "shards/000000.idx",
        "shards/000001.idx",
        "shards/000002.idx",
    ]
    members = tar_members(src)
    cache = tmp_path / "cache"
    with StreamingDataset(out, storage_options=options, cache_dir=cache) as ds:
        found = {int(label): image for image, label in ds}
    assert sorted(found) == list(range(12))
    for member in members.values():
        np.testing.assert_array_equal(found[int(member["cls"])], decode(member["jpg"]))
    report = verify_remote(out, options)
    assert report.ok, report.format()


def test_a_local_index_over_tars_at_a_url(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    options = s3_server.storage_options
    src = write_tars(tmp_path / "tars", 6)
    url = f"s3://{s3_bucket}/tars-{uuid.uuid4().hex[:8]}"
    _upload(src, Location(url, options))
    out = tmp_path / "out"
    index_shards(
        [f"{url}/train-{{000000..000001}}.tar"],
        out,
        IndexOptions(workers=1, storage_options=options),
    )
    assert read_manifest(out / "fastpack.json").shard_root == url
    with pytest.raises(DatasetNotFoundError, match="read the dataset with StreamingDataset"):
        Dataset(out)[0]
    info = dataset_info(out)  # the index is on a local disk; what counts is where shards lie
    assert (info.file_system, info.io) == ("", "")
    assert "object store: StreamingDataset fetches" in info.format()
    with StreamingDataset(out, storage_options=options, cache_dir=tmp_path / "cache") as ds:
        assert sorted(int(label) for _, label in ds) == list(range(6))


def test_tars_on_a_network_file_system(network_fs: NetworkFs, tmp_path: Path) -> None:
    src = write_tars(network_fs.exported / "tars", 12)
    before = digests(src)
    out = tmp_path / "out"
    summary = index_shards([network_fs.mount / "tars"], out, IndexOptions(workers=2))
    assert summary.samples == 12
    assert digests(src) == before
    members = tar_members(src)
    index = DatasetFiles(out).index
    # The index is on a local disk, the shards on the mount: they are read as a mount's are.
    info = dataset_info(out)
    assert (info.file_system, info.io) == ("fuse.sshfs", "pread")
    with Dataset(out) as ds:
        assert ds.io == "pread"
        for i in range(len(ds)):
            image, label = ds[i]
            member = members[index.key(i)]
            assert int(label) == int(member["cls"])
            np.testing.assert_array_equal(image, decode(member["jpg"]))
    with StreamingDataset(out) as streaming:
        assert sorted(int(label) for _, label in streaming) == list(range(12))
    report = verify_dataset(out)
    assert report.ok, report.format()


def test_a_missing_object_is_named(tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> None:
    url = f"s3://{s3_bucket}/none-{uuid.uuid4().hex[:8]}/train-000000.tar"
    options = IndexOptions(workers=1, storage_options=s3_server.storage_options)
    with pytest.raises(SourceError, match=f"{url}: not found"):
        index_shards([url], tmp_path / "out", options)
