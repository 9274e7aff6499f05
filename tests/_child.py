"""Python run in a fresh interpreter, for the tests of the C extensions on hostile input: a crash
there is a signal in the return code, not the end of the test process, and the memory it grows
is its own."""

from __future__ import annotations

import subprocess
import sys


def run_python(
    code: str, stdin: bytes, *, check: bool = False
) -> subprocess.CompletedProcess[bytes]:
    """`code` in a fresh interpreter with `stdin` on its standard input (60 s at most); its
    output is captured. `check=True` raises CalledProcessError where it exits non-zero."""
    return subprocess.run(
        [sys.executable, "-c", code], input=stdin, capture_output=True, timeout=60, check=check
    )


def assert_refused_in_a_child(
    setup: str, call: str, data: bytes, *, message: str, grown_kib_below: int
) -> None:
    """`call` (a statement over `data`, the bytes read from standard input), run in a fresh
    interpreter after the statements `setup`, raises ValueError(`message`) with its peak
    resident memory (ru_maxrss) grown by less than `grown_kib_below` KiB during the call."""
    code = (
        "import resource, sys\n"
        "data = sys.stdin.buffer.read()\n"
        f"{setup}\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        f"    {call}\n"
        "except ValueError as e:\n"
        "    print(e)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    output = run_python(code, data, check=True).stdout.decode()
    assert output.splitlines()[:-1] == [message], output
    assert int(output.splitlines()[-1]) < grown_kib_below, output
