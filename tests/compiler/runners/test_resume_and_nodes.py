"""The client of a cluster build killed mid-build, then `--resume`; and `--num-nodes` shares run
as separate processes plus a finishing call: the bytes of a local build either way."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.compiler import BuildError, BuildOptions, build

from tests.compiler._helpers import QUIET, tree_bytes
from tests.dask_cluster import LocalDaskCluster

SHAPE = ["--shard-size", "6000", "--max-side", "64", "--shuffle-seed", "3"]
TIMEOUT_S = 120


def fastpack(*args: str) -> list[str]:
    return [sys.executable, "-m", "fastpack", "build", *args, *SHAPE, "--no-progress"]


def local_bytes(source: Path, out: Path, check: str = "structure") -> dict[str, bytes]:
    shape = {"shard_size": 6000, "max_side": 64, "shuffle_seed": 3}
    options = BuildOptions(workers=1, check=check, **shape, **QUIET)  # type: ignore[arg-type]
    build(source, out, options)
    return tree_bytes(out)


def test_the_client_killed_mid_build_then_resume_completes_identical(
    make_image_folder: Callable[..., Path], tmp_path: Path, dask_cluster: LocalDaskCluster
) -> None:
    source = make_image_folder(classes=4, per_class=30)
    expected = local_bytes(source, tmp_path / "local", "decode")
    out = tmp_path / "dask"
    command = fastpack(
        str(source), str(out), "--scheduler", dask_cluster.address, "--check", "decode"
    )
    client = subprocess.Popen(command)
    deadline = time.monotonic() + TIMEOUT_S
    while len(list(out.glob("shards/*.tar"))) < 2 and client.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    client.send_signal(signal.SIGKILL)
    client.wait()
    assert client.returncode == -9, "the build finished before it could be killed"
    assert not (out / "fastpack.json").exists()
    subprocess.run([*command, "--resume"], check=True, timeout=TIMEOUT_S)
    assert tree_bytes(out) == expected


def test_two_node_shares_and_a_finishing_call_give_the_local_bytes(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    source = make_image_folder(classes=3, per_class=12)
    expected = local_bytes(source, tmp_path / "local")
    out = tmp_path / "nodes"

    def share(rank: int) -> list[str]:
        plan = str(tmp_path / f"plan-{rank}")
        return fastpack(
            str(source),
            str(out),
            "--num-nodes",
            "2",
            "--node-rank",
            str(rank),
            "--workers",
            "1",
            "--staging",
            plan,
        )

    nodes = [subprocess.Popen(share(rank), stdout=subprocess.PIPE, text=True) for rank in (0, 1)]
    said = [node.communicate(timeout=TIMEOUT_S)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0]
    assert not (out / "fastpack.json").exists()  # a share never writes the index
    assert all("--resume" in text for text in said)
    shards = sorted(f"shards/{p.name}" for p in out.glob("shards/*.tar"))
    assert shards == sorted(n for n in expected if n.endswith(".tar"))
    assert not (tmp_path / "plan-0").exists()  # a finished share removes its plan
    subprocess.run(fastpack(str(source), str(out), "--resume"), check=True, timeout=TIMEOUT_S)
    assert tree_bytes(out) == expected


def test_a_node_share_with_resume_finishes_when_every_shard_is_there(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    source = make_image_folder(classes=2, per_class=12)
    expected = local_bytes(source, tmp_path / "local")
    out = tmp_path / "nodes"
    for rank in (1, 0):
        options = BuildOptions(
            workers=1,
            shard_size=6000,
            max_side=64,
            shuffle_seed=3,
            num_nodes=2,
            node_rank=rank,
            resume=rank == 0,
            **QUIET,
        )
        summary = build(source, out, options, staging=tmp_path / f"plan-{rank}")
    assert tree_bytes(out) == expected
    assert summary.shards == len([n for n in expected if n.endswith(".tar")])


def test_a_node_share_of_another_build_is_refused(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    source = make_image_folder(classes=2, per_class=6)
    out = tmp_path / "nodes"
    first = BuildOptions(workers=1, shard_size=6000, num_nodes=2, node_rank=0, **QUIET)
    build(source, out, first, staging=tmp_path / "plan-0")
    other = BuildOptions(workers=1, shard_size=9000, num_nodes=2, node_rank=1, **QUIET)
    with pytest.raises(BuildError, match="shard_size=6000 \\(now 9000\\)"):
        build(source, out, other, staging=tmp_path / "plan-1")


@pytest.mark.parametrize(
    ("nodes", "rank", "resume"), [(2, None, False), (2, 2, False), (0, None, False)]
)
def test_bad_node_options_are_refused(nodes: int, rank: int | None, resume: bool) -> None:
    with pytest.raises(BuildError, match="num_nodes"):
        BuildOptions(num_nodes=nodes, node_rank=rank, resume=resume)
