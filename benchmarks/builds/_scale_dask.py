"""A local Dask cluster for the build-scale benchmark: one scheduler on 127.0.0.1 (port chosen by
the scheduler) and single-threaded worker processes, started with the `dask` command line and
stopped on exit."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType

START_SECONDS = 120.0
STOP_SECONDS = 30.0
_REGISTERED = "Registered to:"  # what a worker logs once the scheduler knows it


class DaskCluster:
    """`with DaskCluster(dask, workers, directory) as cluster:` gives `cluster.address`, and
    `cluster.roots()`: the pid and role of the scheduler and of each worker's nanny."""

    def __init__(self, dask: str, workers: int, directory: Path) -> None:
        self.dask, self.workers, self.directory = dask, workers, directory
        self.address = ""
        self._scheduler: subprocess.Popen[bytes] | None = None
        self._nannies: list[subprocess.Popen[bytes]] = []

    def _start(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = (self.directory / f"{name}.log").open("wb")
        with log:
            return subprocess.Popen([self.dask, *args], stdout=log, stderr=subprocess.STDOUT)

    def _wait_for_address(self, file: Path) -> str:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self._scheduler is not None and self._scheduler.poll() is not None:
                break
            try:
                return str(json.loads(file.read_text())["address"])
            except (FileNotFoundError, ValueError, KeyError):
                time.sleep(0.2)
        raise RuntimeError(f"the Dask scheduler did not start; see {self.directory}/scheduler.log")

    def _wait_for_workers(self) -> None:
        """Until every worker's log says it registered with the scheduler."""
        logs = [self.directory / f"worker-{k}.log" for k in range(self.workers)]
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if all(_REGISTERED in log.read_text(errors="replace") for log in logs):
                return
            if any(n.poll() is not None for n in self._nannies):
                break
            time.sleep(0.2)
        raise RuntimeError(f"the Dask workers did not register; see {self.directory}/worker-*.log")

    def __enter__(self) -> DaskCluster:
        self.directory.mkdir(parents=True, exist_ok=True)
        file = self.directory / "scheduler.json"
        file.unlink(missing_ok=True)
        self._scheduler = self._start(
            "scheduler",
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(file),
            ],
        )
        try:
            self.address = self._wait_for_address(file)
            for k in range(self.workers):
                local = self.directory / f"worker-{k}"
                local.mkdir(exist_ok=True)
                self._nannies.append(
                    self._start(
                        f"worker-{k}",
                        [
                            "worker",
                            self.address,
                            "--nthreads",
                            "1",
                            "--nworkers",
                            "1",
                            "--memory-limit",
                            "0",
                            "--local-directory",
                            str(local),
                            "--no-dashboard",
                            "--name",
                            f"bench-{k}",
                        ],
                    )
                )
            self._wait_for_workers()
        except BaseException:
            self._stop()
            raise
        return self

    def roots(self) -> dict[int, str]:
        found = {n.pid: "nanny" for n in self._nannies}
        if self._scheduler is not None:
            found[self._scheduler.pid] = "scheduler"
        return found

    def _stop(self) -> None:
        """SIGTERM to each worker's nanny, then to the scheduler; SIGKILL after STOP_SECONDS."""
        for group in (self._nannies, [self._scheduler] if self._scheduler else []):
            for process in group:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in group:
                try:
                    process.wait(timeout=STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop()
