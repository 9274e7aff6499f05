"""Builds into a real S3 server (SeaweedFS on 127.0.0.1): `build()` with a URL as its output, in
this process, through a Dask cluster, and as two node shares plus a finishing call; the objects
are the bytes of a local build."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastpack.compiler import BuildError, BuildOptions, build

from tests.compiler._helpers import QUIET, tree_bytes
from tests.conftest import jpeg_bytes
from tests.dask_cluster import LocalDaskCluster
from tests.s3_server import S3Server

SHAPE: dict[str, Any] = {"shard_size": 6000, "max_side": 64, "shuffle_seed": 3}


def store_bytes(server: S3Server, url: str) -> dict[str, bytes]:
    fs = server.filesystem()
    root = url.removeprefix("s3://")
    return {path[len(root) + 1 :]: fs.cat_file(path) for path in sorted(fs.find(root))}


def test_build_takes_a_url_as_its_output(
    make_image_folder: Callable[..., Path], tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    source = make_image_folder(classes=2, per_class=8)
    build(source, tmp_path / "local", BuildOptions(workers=1, **SHAPE, **QUIET))
    url = f"s3://{s3_bucket}/ds"
    options = BuildOptions(workers=2, **SHAPE, **QUIET)
    store = s3_server.storage_options
    summary = build(source, url, options, staging=tmp_path / "staging", storage_options=store)
    assert store_bytes(s3_server, url) == tree_bytes(tmp_path / "local")  # no build files left
    assert not (tmp_path / "staging").exists()
    with pytest.raises(BuildError, match="already holds a fastpack dataset; pass --resume"):
        build(source, url, options, staging=tmp_path / "again", storage_options=store)
    resumed = BuildOptions(workers=2, resume=True, **SHAPE, **QUIET)
    again = build(source, url, resumed, staging=tmp_path / "again", storage_options=store)
    assert (again.samples, again.shards, again.bytes) == (
        summary.samples,
        summary.shards,
        summary.bytes,
    )
    assert not (tmp_path / "again").exists()


def test_a_cluster_build_into_the_store_gives_the_local_bytes(
    make_image_folder: Callable[..., Path],
    tmp_path: Path,
    dask_cluster: LocalDaskCluster,
    s3_server: S3Server,
    s3_bucket: str,
) -> None:
    source = make_image_folder(classes=3, per_class=10)
    build(source, tmp_path / "local", BuildOptions(workers=1, **SHAPE, **QUIET))
    url = f"s3://{s3_bucket}/ds"
    summary = build(
        source,
        url,
        BuildOptions(**SHAPE, **QUIET),
        cluster=dask_cluster.address,
        staging=tmp_path / "staging",
        storage_options=s3_server.storage_options,
    )
    assert store_bytes(s3_server, url) == tree_bytes(tmp_path / "local")  # no build files left
    assert not (tmp_path / "staging").exists()
    assert summary.shards == len(list((tmp_path / "local" / "shards").glob("*.tar")))
    assert len([line for line in summary.notes if line.startswith("worker ")]) == 2


def test_node_shares_into_the_store_then_a_finishing_call(
    make_image_folder: Callable[..., Path], tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    source = make_image_folder(classes=2, per_class=12)
    build(source, tmp_path / "local", BuildOptions(workers=1, **SHAPE, **QUIET))
    url = f"s3://{s3_bucket}/ds"
    options = s3_server.storage_options
    for rank in (0, 1):
        share = BuildOptions(workers=1, num_nodes=2, node_rank=rank, **SHAPE, **QUIET)
        summary = build(
            source, url, share, staging=tmp_path / f"plan-{rank}", storage_options=options
        )
        assert "--resume" in summary.format()
        assert not (tmp_path / f"plan-{rank}").exists()
    assert "fastpack.json" not in store_bytes(s3_server, url)
    finishing = BuildOptions(workers=1, num_nodes=2, resume=True, **SHAPE, **QUIET)
    build(source, url, finishing, staging=tmp_path / "finish", storage_options=options)
    assert store_bytes(s3_server, url) == tree_bytes(tmp_path / "local")


def test_a_node_share_with_other_options_is_refused_by_the_store(
    make_image_folder: Callable[..., Path], tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    source = make_image_folder(classes=2, per_class=6)
    url = f"s3://{s3_bucket}/ds"
    first = BuildOptions(workers=1, num_nodes=2, node_rank=0, **SHAPE, **QUIET)
    build(source, url, first, staging=tmp_path / "p0", storage_options=s3_server.storage_options)
    other = BuildOptions(workers=1, num_nodes=2, node_rank=1, quality=50, **SHAPE, **QUIET)
    with pytest.raises(BuildError, match=r"quality=90 \(now 50\)"):
        build(
            source, url, other, staging=tmp_path / "p1", storage_options=s3_server.storage_options
        )


def test_a_source_spilled_into_local_staging_is_refused_for_a_cluster(
    tmp_path: Path, dask_cluster: LocalDaskCluster, s3_server: S3Server, s3_bucket: str
) -> None:
    """A Parquet source's image bytes are spilled into the plan's directory: on a cluster that
    writes to a store, that directory is the client's, so the build stops before any task."""
    import pyarrow as pa  # noqa: PLC0415 -- optional: pyarrow
    import pyarrow.parquet as pq  # noqa: PLC0415 -- optional: pyarrow

    table = pa.table({"image": [jpeg_bytes(seed=i) for i in range(4)], "label": [0, 1, 0, 1]})
    pq.write_table(table, tmp_path / "train.parquet")
    with pytest.raises(BuildError, match=r"staging directory .*--staging"):
        build(
            tmp_path / "train.parquet",
            f"s3://{s3_bucket}/ds",
            BuildOptions(**QUIET),
            cluster=dask_cluster.address,
            staging=tmp_path / "staging",
            storage_options=s3_server.storage_options,
        )
    assert not s3_server.filesystem().find(f"{s3_bucket}/ds/shards")
