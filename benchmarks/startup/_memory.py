"""A process's private memory from /proc: smaps_rollup totals, and USS split by what is mapped.

Private pages are those mapped by this process alone (`Private_Clean + Private_Dirty`); a clean
private page of a file is a page-cache page that no other process has mapped. USS is the same
sum taken over `/proc/<pid>/smaps` mapping by mapping (psutil's definition), which also says
which mappings the private pages belong to.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from fastpack.formats import INDEX_NAME

from benchmarks.procmem import cpu_ticks, rollup_kib

_PROC = Path("/proc")
_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
_ROLLUP_KEYS = ("Rss", "Pss", "Private_Clean", "Private_Dirty", "Shared_Clean", "Shared_Dirty")


def _kind(path: str) -> str:
    """What a mapping holds: the index, a shard, shared memory, a library, or anonymous memory."""
    if path.endswith(INDEX_NAME):
        return "index"
    if path.endswith(".tar"):
        return "shards"
    if path.startswith(("/dev/shm", "/memfd:")) or "torch_" in path:
        return "shm"
    if path.startswith("/") and ".so" in path:
        return "libraries"
    if path.startswith("/"):
        return "other files"
    return "anonymous"  # heap, stack, anonymous maps (no path or a [name])


_MAPPING_FIELDS = 6  # an smaps mapping line with a path has six fields


def uss_kib(pid: int) -> dict[str, int]:
    """USS (`Private_Clean + Private_Dirty` summed over the mappings), and USS and RSS split by
    `_kind` (`uss_index`, `rss_index`, ...)."""
    private: dict[str, int] = {}
    resident: dict[str, int] = {}
    kind = "anonymous"
    for line in (_PROC / str(pid) / "smaps").read_text().splitlines():
        if _MAPPING.match(line):
            fields = line.split(maxsplit=5)
            kind = _kind(fields[5] if len(fields) == _MAPPING_FIELDS else "")
        elif line.startswith(("Private_Clean:", "Private_Dirty:")):
            private[kind] = private.get(kind, 0) + int(line.split()[1])
        elif line.startswith("Rss:"):
            resident[kind] = resident.get(kind, 0) + int(line.split()[1])
    return {
        "uss": sum(private.values()),
        **{f"uss_{k}": v for k, v in sorted(private.items())},
        **{f"rss_{k}": v for k, v in sorted(resident.items())},
    }


def mapping_rss_kib(pid: int, name: str) -> int:
    """RSS of the mappings of `pid` whose path ends with `name`."""
    total, current = 0, False
    for line in (_PROC / str(pid) / "smaps").read_text().splitlines():
        if _MAPPING.match(line):
            current = line.endswith(name)
        elif current and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def memory_kib(pid: int) -> dict[str, int]:
    """Rollup fields, their private sum, and the USS split of one process."""
    fields = rollup_kib(pid)
    rollup = {key: fields[key] for key in _ROLLUP_KEYS if key in fields}
    private = rollup["Private_Clean"] + rollup["Private_Dirty"]
    return {**rollup, "private": private, **uss_kib(pid)}


def wait_idle(pids: Sequence[int], quiet: float = 0.5, limit: float = 30.0) -> None:
    """Return once `pids` used no CPU for `quiet` seconds (or after `limit` seconds)."""
    deadline = time.monotonic() + limit
    last = cpu_ticks(pids)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = cpu_ticks(pids)
        if now == last:
            return
        last = now
