"""Runs fuzz cases in a long-lived child process, and survives what they do to it.

`Worker.run(target, payload)` sends one case to the child (`tests.fuzz._worker`) and returns its
`Outcome`. The child answers with what the case gave (`targets.classify`) and its peak memory;
here that becomes a failure when the peak passes the budget. When the child dies (a signal:
SIGSEGV, SIGABRT from heap corruption, SIGKILL from the kernel) or does not answer within the
timeout (a hang: it is killed), the case is recorded as such, with the end of the child's
stderr, and the next case starts a new child. Each child gets a folder of its own.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).absolute().parents[2]  # not resolved: a staged tree of links stays one
_LENGTH = struct.Struct(">I")
FAILURES = ("signal", "exit", "hang", "memory", "traceback", "mismatch")
PASSES = ("ok", "refused", "kept-undecodable")
_START_TIMEOUT = 120.0  # seconds for a child to import everything and answer
_STDERR_TAIL = 6000  # characters of a dead child's stderr looked at for its outcome
_STACK_LINES = ("File ", "Current thread", "Thread 0x", "Extension modules", "<no Python frame>")


@dataclass(frozen=True)
class Outcome:
    kind: str  # one of PASSES or FAILURES
    detail: str
    seconds: float = 0.0
    peak_kib: int = 0  # resident memory the case added at its peak

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES


def memory_budget_kib() -> int:
    """The most resident memory one case may add: what a decode within the default pixel budget
    may take (3 bytes per sample of a progressive colour image, 5 of a grey one, formats/
    image_header.py), plus 256 MiB of slack; 1 GiB where the reader has no pixel budget."""
    try:
        from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET  # noqa: PLC0415 -- optional: fastpack, absent or without a pixel budget in the sources fuzzed
    except ImportError:
        return 1 << 20
    return int(5 * DEFAULT_PIXEL_BUDGET // 1024 + (256 << 10))


class WorkerDied(Exception):
    """The child ended or stopped answering."""


class Worker:
    """One child process at a time, restarted after a failure that took the child with it."""

    def __init__(
        self,
        workdir: Path,
        templates: dict[str, Path],
        *,
        budget_kib: int,
        timeout: float,
    ) -> None:
        self.workdir, self.templates = workdir, templates
        self.budget_kib, self.timeout = budget_kib, timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.peaks = True  # whether the child can reset its peak (clear_refs)

    def _start(self) -> subprocess.Popen[bytes]:
        self.starts += 1
        folder = self.workdir / f"child-{self.starts}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        config = {
            "workdir": str(folder),
            "templates": {k: str(v) for k, v in self.templates.items()},
            "address_space_kib": self.budget_kib + (512 << 10),
        }
        env = {**os.environ, "MALLOC_ARENA_MAX": "2", "PYTHONFAULTHANDLER": "1"}
        self._log = (folder / "stderr.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz._worker", json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
        self.process, self._folder = process, folder
        try:
            ready = self._receive(_START_TIMEOUT)
        except WorkerDied as e:
            self._kill()
            raise RuntimeError(f"a fuzz worker did not start: {self._stderr()}") from e
        self.peaks = bool(ready["peaks"])
        return process

    def run(self, target: str, payload: dict[str, Any]) -> Outcome:
        process = self.process or self._start()
        assert process.stdin is not None
        data = pickle.dumps({"target": target, "payload": payload}, pickle.HIGHEST_PROTOCOL)
        try:
            process.stdin.write(_LENGTH.pack(len(data)) + data)
            process.stdin.flush()
            answer = self._receive(self.timeout)
        except (BrokenPipeError, WorkerDied):
            return self._death()
        outcome = Outcome(answer["kind"], answer["detail"], answer["seconds"], answer["peak_kib"])
        if not outcome.failed and outcome.peak_kib > self.budget_kib:
            return Outcome(
                "memory",
                f"peak {outcome.peak_kib >> 10} MiB over the {self.budget_kib >> 10} MiB budget "
                f"({outcome.kind}: {outcome.detail})",
                outcome.seconds,
                outcome.peak_kib,
            )
        return outcome

    def _receive(self, timeout: float) -> dict[str, Any]:
        assert self.process is not None
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        head = self._read(self.process.stdout, _LENGTH.size, deadline)
        (size,) = _LENGTH.unpack(head)
        message: dict[str, Any] = pickle.loads(self._read(self.process.stdout, size, deadline))
        return message

    def _read(self, stream: IO[bytes], size: int, deadline: float) -> bytes:
        chunks, left = [], size
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([stream], [], [], wait)[0]:
                raise WorkerDied("no answer in time")
            chunk = os.read(stream.fileno(), left)
            if not chunk:
                raise WorkerDied("the child closed its end")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _death(self) -> Outcome:
        """The outcome of a case whose child died or hung; the child is gone afterwards."""
        assert self.process is not None
        try:
            code = self.process.wait(timeout=2)
            hung = False
        except subprocess.TimeoutExpired:
            hung = True
            self._kill()
            code = self.process.wait()
        tail = self._stderr()
        self.process = None
        if hung:
            return Outcome("hang", f"no answer within {self.timeout:g} s; killed. {tail}")
        if code < 0:
            return Outcome("signal", f"died of {signal.Signals(-code).name}. {tail}")
        return Outcome("exit", f"exited with status {code}. {tail}")

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)

    def _stderr(self) -> str:
        """The end of the child's stderr: its last words (the C library's or the sanitizer's
        report, "Fatal Python error"), then the innermost frames of faulthandler's stack."""
        self._log.flush()
        text = (self._folder / "stderr.log").read_bytes().decode("utf-8", "replace")
        lines = [line.strip() for line in text[-_STDERR_TAIL:].splitlines() if line.strip()]
        frames = [line for line in lines if line.startswith("File ")]
        words = [line for line in lines if not line.startswith(_STACK_LINES)]
        return " | ".join(words[-4:] + frames[:4])

    def close(self) -> None:
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
                self.process.wait()
            self.process = None
        shutil.rmtree(self.workdir, ignore_errors=True)
