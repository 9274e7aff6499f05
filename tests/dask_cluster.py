"""A real Dask cluster for the tests: `dask scheduler` and `dask worker` processes on 127.0.0.1.

Registered as a pytest plugin from tests/conftest.py. `LocalDaskCluster` starts a scheduler on a
free port and workers (one thread each, no nanny, each with its own local directory); a worker
can be killed (SIGKILL) or started under a shell prefix (such as a `ulimit`). The fixture
`dask_cluster` is one cluster of two workers for the session; tests that kill workers make their
own with `make_dask_cluster`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.s3_server import free_ports

START_TIMEOUT_S = 60.0


def _dask() -> str:
    beside = Path(sys.executable).parent / "dask"
    if not beside.exists():
        pytest.fail("no `dask` command: install the test extra (pip install -e '.[test]')")
    return str(beside)


class LocalDaskCluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_ports(1)[0]
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []

    def _spawn(self, command: list[str], log: str, prefix: str = "") -> subprocess.Popen[bytes]:
        out = (self.root / log).open("ab")
        env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
        if prefix:
            shell = f"{prefix}; exec " + " ".join(f"'{c}'" for c in command)
            args: list[str] = ["bash", "-c", shell]
        else:
            args = command
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=self.root, env=env)
        out.close()
        return proc

    def start_scheduler(self) -> None:
        self.scheduler = self._spawn(
            [
                _dask(),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-dashboard",
            ],
            "scheduler.log",
        )

    def start_worker(self, prefix: str = "") -> subprocess.Popen[bytes]:
        """One more worker; `prefix`: shell commands run before it (a `ulimit`)."""
        n = len(self.workers)
        local = self.root / f"worker-{n}"
        local.mkdir(exist_ok=True)
        proc = self._spawn(
            [
                _dask(),
                "worker",
                self.address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--local-directory",
                str(local),
                "--name",
                f"w{n}",
                "--host",
                "127.0.0.1",
                "--memory-limit",
                "0",
            ],
            f"worker-{n}.log",
            prefix,
        )
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, count: int) -> None:
        from distributed import Client  # noqa: PLC0415 -- optional: distributed

        with Client(self.address, timeout=START_TIMEOUT_S) as client:  # type: ignore[no-untyped-call]
            client.wait_for_workers(count, timeout=START_TIMEOUT_S)

    def kill_worker(self, index: int) -> None:
        self.workers[index].send_signal(signal.SIGKILL)
        self.workers[index].wait()

    def stop(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def start_cluster(
    root: Path, workers: int = 2, prefixes: dict[int, str] | None = None
) -> LocalDaskCluster:
    cluster = LocalDaskCluster(root)
    cluster.start_scheduler()
    for n in range(workers):
        cluster.start_worker((prefixes or {}).get(n, ""))
    deadline = time.monotonic() + START_TIMEOUT_S
    while cluster.scheduler is not None and cluster.scheduler.poll() is None:
        try:
            cluster.wait_for_workers(workers)
            return cluster
        except OSError:
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
    cluster.stop()
    pytest.fail(f"the Dask cluster in {root} did not start; see its logs")


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDaskCluster]:
    """A scheduler and two one-thread workers for the whole session."""
    cluster = start_cluster(tmp_path_factory.mktemp("dask"))
    yield cluster
    cluster.stop()


@pytest.fixture
def make_dask_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., LocalDaskCluster]]:
    """Start clusters of one's own (to kill their workers); all are stopped at the end."""
    started: list[LocalDaskCluster] = []

    def make(workers: int = 2, prefixes: dict[int, str] | None = None) -> LocalDaskCluster:
        cluster = start_cluster(tmp_path_factory.mktemp("dask"), workers, prefixes)
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.stop()
