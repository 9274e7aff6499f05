"""`append.lock`: a second append is refused, naming the holder and how to clear the lock; a
lock whose process is gone is taken over by a resume."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fastpack.compiler import AppendError, AppendLockedError, BuildOptions, append
from fastpack.compiler.append.lock import FileLock, LockInfo

from tests.compiler._helpers import QUIET
from tests.compiler.append._datasets import image_folder


def _lock(dataset: Path, host: str, pid: int) -> None:
    holder = {"host": host, "pid": pid, "started": "2026-11-28T01:02:03Z", "version": 2}
    (dataset / "append.lock").write_text(json.dumps(holder))


def _gone_pid() -> int:
    """The id of a process of this host that has exited."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                           capture_output=True, text=True)  # fmt: skip
    return int(child.stdout)


def test_a_running_append_holds_the_dataset(dataset: Path, new_inputs: Path) -> None:
    host = socket.gethostname()
    _lock(dataset, host, 1)  # pid 1 runs as long as the machine does
    expected = (
        rf"append\.lock: another append \(of version 2\) holds this dataset: host {host}, pid 1, "
        r"since 2026-11-28T01:02:03Z; wait for it to end"
    )
    for resume in (False, True):
        with pytest.raises(AppendLockedError, match=expected):
            append(dataset, new_inputs, BuildOptions(resume=resume, **QUIET))
    _lock(dataset, "elsewhere", 4242)
    with pytest.raises(AppendLockedError, match=r"host elsewhere, pid 4242.* or remove .*lock"):
        append(dataset, new_inputs, BuildOptions(resume=True, **QUIET))
    assert not (dataset / "versions").exists()  # refused before any work


def test_a_stale_lock_is_taken_over_by_a_resume(dataset: Path, new_inputs: Path) -> None:
    pid = _gone_pid()
    _lock(dataset, socket.gethostname(), pid)
    with pytest.raises(
        AppendLockedError,
        match=rf"pid {pid}, .*; that process is gone: finish its append with `fastpack append "
        r"--resume`",
    ):
        append(dataset, new_inputs, BuildOptions(**QUIET))
    summary = append(dataset, new_inputs, BuildOptions(resume=True, **QUIET))
    assert summary.version == 2
    assert summary.notes == (
        f"took over the lock of a gone append (host {socket.gethostname()}, pid {pid}, since "
        "2026-11-28T01:02:03Z)",
    )
    assert not (dataset / "append.lock").exists()


def test_the_lock_file_is_created_exclusively(tmp_path: Path) -> None:
    lock = FileLock(tmp_path)
    assert lock.acquire(2, resume=False) is None
    held = json.loads((tmp_path / "append.lock").read_text())
    assert set(held) == {"host", "pid", "started", "version"}
    assert held["version"] == 2
    with pytest.raises(AppendLockedError, match="holds this dataset"):
        FileLock(tmp_path).acquire(2, resume=True)  # this process is alive
    lock.release()
    assert not (tmp_path / "append.lock").exists()


def test_a_resume_after_the_publish_only_clears_the_leftovers(
    dataset: Path, new_inputs: Path
) -> None:
    append(dataset, new_inputs, BuildOptions(workers=1, **QUIET))
    published = (dataset / "fastpack.json").read_bytes()
    # killed after `fastpack.json` was replaced, before its staging and lock were removed
    _lock(dataset, socket.gethostname(), _gone_pid())
    (dataset / "versions/000002.partial/shards").mkdir(parents=True)
    summary = append(dataset, new_inputs, BuildOptions(resume=True, **QUIET))
    assert summary.version == 2
    assert summary.added.samples == 0
    assert "had published version 2 already" in summary.notes[0]
    assert (dataset / "fastpack.json").read_bytes() == published  # no version 3
    assert not (dataset / "versions/000002.partial").exists()
    assert not (dataset / "append.lock").exists()


def test_an_append_that_started_before_another_published(
    dataset: Path, new_inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    acquire = FileLock.acquire
    other = image_folder(tmp_path / "other", {"owl": 2}, seed=3)

    def publish_first(self: FileLock, version: int, *, resume: bool) -> LockInfo | None:
        monkeypatch.setattr(FileLock, "acquire", acquire)
        append(dataset, other, BuildOptions(workers=1, **QUIET))  # wins the race
        return acquire(self, version, resume=resume)

    monkeypatch.setattr(FileLock, "acquire", publish_first)
    with pytest.raises(
        AppendError,
        match=r"ds: another append published version 2 while this one started from version 1; "
        r"append again",
    ):
        append(dataset, new_inputs, BuildOptions(workers=1, **QUIET))
    assert not (dataset / "append.lock").exists()
    assert append(dataset, new_inputs, BuildOptions(workers=1, **QUIET)).version == 3
