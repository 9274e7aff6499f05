"""Builds through a real Dask cluster (scheduler and two workers on 127.0.0.1) give the bytes of
a local build: whatever the workers, a worker killed mid-build, a worker that cannot write."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastpack.compiler import BuildError, BuildOptions, build

from tests.compiler._helpers import QUIET, tree_bytes
from tests.dask_cluster import LocalDaskCluster

SHAPE: dict[str, Any] = {"shard_size": 6000, "max_side": 64, "shuffle_seed": 3}


def local_build(source: Path, out: Path, **options: object) -> dict[str, bytes]:
    build(source, out, BuildOptions(workers=1, **SHAPE, **QUIET, **options))  # type: ignore[arg-type]
    return tree_bytes(out)


def test_cluster_build_is_byte_identical_to_a_local_one(
    make_image_folder: Callable[..., Path], tmp_path: Path, dask_cluster: LocalDaskCluster
) -> None:
    source = make_image_folder(classes=3, per_class=10)
    expected = local_build(source, tmp_path / "local")
    summary = build(
        source, tmp_path / "dask", BuildOptions(**SHAPE, **QUIET), cluster=dask_cluster.address
    )
    assert tree_bytes(tmp_path / "dask") == expected
    assert summary.shards > 2
    workers = [line for line in summary.notes if line.startswith("worker ")]
    assert len(workers) == 2, summary.notes  # both workers ran shards
    assert sum(int(line.split(": ")[1].split(" shards")[0]) for line in workers) == summary.shards


def test_cluster_build_with_a_client_object(
    make_image_folder: Callable[..., Path], tmp_path: Path, dask_cluster: LocalDaskCluster
) -> None:
    from distributed import Client  # noqa: PLC0415 -- optional: distributed

    source = make_image_folder(classes=2, per_class=6)
    expected = local_build(source, tmp_path / "local")
    with Client(dask_cluster.address) as client:  # type: ignore[no-untyped-call]
        build(source, tmp_path / "dask", BuildOptions(**SHAPE, **QUIET), cluster=client)
        assert client.status == "running"  # the caller's client is left open
    assert tree_bytes(tmp_path / "dask") == expected


def test_a_strict_reject_on_a_worker_stops_the_build(
    make_image_folder: Callable[..., Path], tmp_path: Path, dask_cluster: LocalDaskCluster
) -> None:
    source = make_image_folder(classes=2, per_class=6)
    (source / "class_01" / "img_0003.jpg").write_bytes(b"not an image")
    options = BuildOptions(**SHAPE, strict=True, **QUIET)
    with pytest.raises(BuildError, match=r"img_0003\.jpg.*strict"):
        build(source, tmp_path / "dask", options, cluster=dask_cluster.address)


def _when_shards_appear(out: Path, count: int, action: Callable[[], None]) -> threading.Thread:
    def watch() -> None:
        while len(list((out / "shards").glob("*.tar"))) < count:
            time.sleep(0.01)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_worker_killed_mid_build_the_build_completes_identical(
    make_image_folder: Callable[..., Path],
    tmp_path: Path,
    make_dask_cluster: Callable[..., LocalDaskCluster],
) -> None:
    source = make_image_folder(classes=4, per_class=30)
    expected = local_build(source, tmp_path / "local", check="decode")
    cluster = make_dask_cluster()
    out = tmp_path / "dask"
    killed: list[int] = []

    def kill() -> None:
        killed.append(len(list((out / "shards").glob("*.tar"))))
        cluster.kill_worker(1)

    watcher = _when_shards_appear(out, 2, kill)
    summary = build(
        source, out, BuildOptions(**SHAPE, check="decode", **QUIET), cluster=cluster.address
    )
    watcher.join(5)
    assert killed
    assert killed[0] < summary.shards  # the worker died before the last shard
    assert cluster.workers[1].returncode == -9
    assert tree_bytes(out) == expected


def test_a_task_that_fails_on_one_worker_is_retried_on_the_other(
    make_image_folder: Callable[..., Path],
    tmp_path: Path,
    make_dask_cluster: Callable[..., LocalDaskCluster],
) -> None:
    """Worker 0 may write files of 8 KiB at most (`ulimit -f`): every shard fails there."""
    source = make_image_folder(classes=3, per_class=10)
    expected = local_build(source, tmp_path / "local")
    cluster = make_dask_cluster(prefixes={0: "ulimit -f 8"})
    summary = build(
        source, tmp_path / "dask", BuildOptions(**SHAPE, **QUIET), cluster=cluster.address
    )
    assert tree_bytes(tmp_path / "dask") == expected
    lines = {line.split(":")[0]: line for line in summary.notes}
    assert len(lines) == 1, summary.notes  # only the other worker finished shards


def test_a_local_build_does_not_import_dask(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    source = make_image_folder(classes=2, per_class=3)
    code = (
        "import sys; from fastpack.compiler import BuildOptions, build; "
        f"build({str(source)!r}, {str(tmp_path / 'out')!r}, "
        "BuildOptions(workers=2, progress=False)); "
        "assert 'distributed' not in sys.modules and 'dask' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_an_address_without_a_scheduler_is_named_before_planning(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    import dask  # noqa: PLC0415 -- optional: dask

    source = make_image_folder(classes=2, per_class=2)
    with (
        dask.config.set({"distributed.comm.timeouts.connect": "2s"}),
        pytest.raises(BuildError, match=r"tcp://127\.0\.0\.1:9: cannot reach a Dask scheduler"),
    ):
        build(source, tmp_path / "out", BuildOptions(**QUIET), cluster="tcp://127.0.0.1:9")
    assert not (tmp_path / "out" / ".fastpack-build" / "plan.json").exists()
