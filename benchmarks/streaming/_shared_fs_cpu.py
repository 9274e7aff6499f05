"""CPU time of the network file system's processes on this machine: the sshfs daemon of a mount
and its ssh client, and this process's other descendants (sshd with its sessions and SFTP
servers, the latency proxy)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from benchmarks.procmem import cpu_ticks, descendants


def _sshfs_of(mountpoint: Path) -> list[int]:
    """The sshfs daemon serving `mountpoint` (it leaves our process tree when it daemonizes)."""
    target = str(mountpoint).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and Path(argv[0].decode(errors="replace")).name == "sshfs" and target in argv:
            found.append(int(entry.name))
    return found


def file_system_processes(mountpoint: Path) -> list[int]:
    """Every process of the mount at `mountpoint` alive now, with its descendants."""
    pids = set(descendants(os.getpid())[1:])
    for sshfs in _sshfs_of(mountpoint):
        pids.update(descendants(sshfs))
    return sorted(pids)


def cpu_seconds_of(pids: Sequence[int]) -> float:
    """User + system CPU seconds used so far by `pids` (a process gone counts 0)."""
    return cpu_ticks(pids) / os.sysconf("SC_CLK_TCK")
