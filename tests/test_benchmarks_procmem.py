"""benchmarks/procmem.py, the one /proc sampler of the benchmarks: every memory reading is a
`dict[str, int]` of KiB, empty once the process has gone."""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks import procmem


def _gone_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_readings_of_a_live_process() -> None:
    rollup = procmem.rollup_kib(os.getpid())
    status = procmem.status_kib("self")
    assert rollup["Rss"] > 0
    assert rollup["Pss"] > 0
    assert status["VmRSS"] > 0
    assert all(isinstance(v, int) for v in [*rollup.values(), *status.values()])


def test_a_gone_process_reads_empty() -> None:
    pid = _gone_pid()
    assert procmem.rollup_kib(pid) == {}
    assert procmem.status_kib(pid) == {}
    assert procmem.cpu_ticks([pid]) == 0
    assert procmem.children(pid) == []


def test_tree_sampler_counts_a_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sampler = procmem.TreeSampler(os.getpid())
        sampler.sample()
        assert child.pid in procmem.descendants(os.getpid())
        assert sampler.peaks.processes >= 2
        assert sampler.peaks.rss_mib > 0
        assert sampler.peaks.pss_mib > 0
    finally:
        child.kill()
        child.wait()
