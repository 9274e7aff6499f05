"""A real network file system for the tests and benchmarks: sshfs over FUSE, to an sshd on
127.0.0.1, through a `LatencyProxy` that adds a round-trip delay and may cap the bandwidth.

`SshServer` runs `sshd` in a directory of its own (host and client keys made there, a free port,
listening on 127.0.0.1 only, SFTP as a subsystem). `mounted(server, exported, mountpoint, ...)`
mounts `exported` at `mountpoint` through a new proxy and unmounts it on exit: each mount starts
with an empty page cache on the client side, so its first read of a file is a cold one.

Needs root (sshd), `/dev/fuse`, and Debian's `sshfs` and `openssh-server` (`.ci/run` installs
them). Registered as a pytest plugin from tests/conftest.py: the session fixture `ssh_server`
and the fixture `network_fs` (a directory exported by the server and mounted fresh for the test:
write to `.exported`, read through `.mount`). Without the tools the tests that use them are
skipped, except when `FASTPACK_REQUIRE_NETWORK_FS=1` (set by `.ci/run`), where that fails them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.latency_proxy import LatencyProxy

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
START_TIMEOUT_S = 20.0
CIPHER = "aes128-gcm@openssh.com"  # AES-NI: the cheapest cipher on the CPUs both ends share


def missing_tools() -> list[str]:
    """What this machine lacks for a mount: tools, root, /dev/fuse."""
    missing = [tool for tool in ("sshfs", "ssh-keygen") if shutil.which(tool) is None]
    missing += [path for path in (SSHD, SFTP_SERVER, "/dev/fuse") if not Path(path).exists()]
    if os.geteuid() != 0:
        missing.append("root")
    if shutil.which("fusermount3") is None and shutil.which("fusermount") is None:
        missing.append("fusermount")
    return missing


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class SshServer:
    """`sshd` on 127.0.0.1:`port`, its keys and configuration under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.client_key = root / "client_key"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        root = self.root
        root.mkdir(parents=True, exist_ok=True)
        for key in (root / "host_key", self.client_key):
            if not key.exists():
                subprocess.run(
                    ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
                )
        shutil.copy(self.client_key.with_suffix(".pub"), root / "authorized_keys")
        config = root / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\n"
            f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
            "StrictModes no\nMaxStartups 100\nMaxSessions 100\n"
            f"Subsystem sftp {SFTP_SERVER}\n"
        )
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
        log = (root / "sshd.log").open("ab")
        self._process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(root / 'sshd.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on 127.0.0.1:{self.port}")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(10)
            self._process = None

    def __enter__(self) -> SshServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _unmount(mountpoint: Path) -> None:
    fusermount = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount"
    for _ in range(50):
        done = subprocess.run([fusermount, "-u", str(mountpoint)], check=False, capture_output=True)
        if done.returncode == 0 or not os.path.ismount(mountpoint):
            return
        time.sleep(0.1)  # busy: a file still open in a process that is ending
    subprocess.run([fusermount, "-u", "-z", str(mountpoint)], check=False, capture_output=True)


@contextlib.contextmanager
def mounted(
    server: SshServer,
    exported: Path,
    mountpoint: Path,
    *,
    delay_s: float = 0.0,
    rate_bytes_per_s: float | None = None,
) -> Iterator[LatencyProxy]:
    """`exported` (a directory on this machine) mounted at `mountpoint` with sshfs, through a
    new `LatencyProxy` in front of `server`; unmounted on exit."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    with LatencyProxy(
        ("127.0.0.1", server.port), delay_s=delay_s, rate_bytes_per_s=rate_bytes_per_s
    ) as proxy:
        options = ",".join(
            (
                f"IdentityFile={server.client_key}",
                "StrictHostKeyChecking=no",
                "UserKnownHostsFile=/dev/null",
                "BatchMode=yes",
                "LogLevel=ERROR",
                f"Ciphers={CIPHER}",
                "Compression=no",
            )
        )
        subprocess.run(
            [
                "sshfs",
                "-p",
                str(proxy.port),
                f"root@127.0.0.1:{exported}",
                str(mountpoint),
                "-o",
                options,
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        try:
            yield proxy
        finally:
            _unmount(mountpoint)


class NetworkFs:
    """A directory on this machine (`exported`) and the same directory through sshfs (`mount`),
    through `proxy`. `remount` mounts it again through a new proxy: a cold page cache, and the
    round trip `delay_s` added."""

    def __init__(self, server: SshServer, exported: Path, mount: Path) -> None:
        self.server, self.exported, self.mount = server, exported, mount
        self._mounted: contextlib.AbstractContextManager[LatencyProxy] | None = None
        self._proxy: LatencyProxy | None = None

    @property
    def proxy(self) -> LatencyProxy:
        if self._proxy is None:
            raise RuntimeError(f"{self.mount} is not mounted")
        return self._proxy

    def remount(self, *, delay_s: float = 0.0, rate_bytes_per_s: float | None = None) -> None:
        self.unmount()
        self._mounted = mounted(
            self.server,
            self.exported,
            self.mount,
            delay_s=delay_s,
            rate_bytes_per_s=rate_bytes_per_s,
        )
        self._proxy = self._mounted.__enter__()

    def unmount(self) -> None:
        done, self._mounted, self._proxy = self._mounted, None, None
        if done is not None:
            done.__exit__(None, None, None)


def _require_tools() -> None:
    missing = missing_tools()
    if not missing:
        return
    message = f"a network file system needs {', '.join(missing)}"
    if os.environ.get("FASTPACK_REQUIRE_NETWORK_FS") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def ssh_server() -> Iterator[SshServer]:
    _require_tools()
    with tempfile.TemporaryDirectory(prefix="fastpack-sshd-") as root, SshServer(Path(root)) as s:
        yield s


@pytest.fixture
def network_fs(ssh_server: SshServer, tmp_path: Path) -> Iterator[NetworkFs]:
    """`tmp_path / "exported"` mounted fresh at `tmp_path / "mount"`, with no added delay (a
    test remounts it for one)."""
    exported = tmp_path / "exported"
    exported.mkdir()
    mount = NetworkFs(ssh_server, exported, tmp_path / "mount")
    mount.remount()
    try:
        yield mount
    finally:
        mount.unmount()
