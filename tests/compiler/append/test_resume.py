"""An append killed (SIGKILL) part way and resumed, and one stopped while publishing, end as
the same bytes as an uninterrupted append."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fastpack.compiler import AppendLockedError, BuildOptions, append
from fastpack.compiler.append import publish

from tests.compiler._helpers import QUIET, tree_bytes
from tests.compiler.append._datasets import file_states, samples
from tests.compiler.test_resume import big_folder, group_gone, wait_for


def _start_append(dataset: Path, source: Path) -> subprocess.Popen[bytes]:
    script = (
        "import sys; from fastpack.compiler import BuildOptions, append; "
        "append(sys.argv[1], sys.argv[2], BuildOptions(workers=2, progress=False))"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, str(dataset), str(source)], start_new_session=True
    )


def test_a_killed_append_resumes_to_the_same_bytes(dataset: Path, tmp_path: Path) -> None:
    clean = Path(shutil.copytree(dataset, tmp_path / "clean"))
    source = big_folder(tmp_path / "many", 200)  # 240x320 images, a few per 4 kB shard
    before = file_states(dataset)
    v1_text = (dataset / "fastpack.json").read_bytes()
    staged = dataset / "versions/000002.partial/shards"
    process = _start_append(dataset, source)
    wait_for(lambda: len(list(staged.glob("*.tar"))) >= 5, 60, "some staged shards")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    wait_for(lambda: group_gone(process.pid), 10, "orphaned workers to exit")
    assert (dataset / "fastpack.json").read_bytes() == v1_text, "it published before the kill"
    assert (dataset / "append.lock").exists()

    with pytest.raises(AppendLockedError, match="that process is gone"):
        append(dataset, source, BuildOptions(workers=1, **QUIET))
    resumed = append(dataset, source, BuildOptions(workers=1, resume=True, **QUIET))
    assert resumed.notes[0].startswith("took over the lock of a gone append")
    append(clean, source, BuildOptions(workers=2, **QUIET))
    assert tree_bytes(dataset) == tree_bytes(clean)
    after = file_states(dataset)
    assert all(after[k] == v for k, v in before.items() if k != "fastpack.json")
    assert resumed.samples == len(samples(dataset)) == 209


def test_an_append_stopped_while_publishing_resumes(
    dataset: Path, new_inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = Path(shutil.copytree(dataset, tmp_path / "clean"))
    append(clean, new_inputs, BuildOptions(workers=1, **QUIET))

    def stop(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(publish, "write_version", stop)  # after the shards moved
    with pytest.raises(OSError, match="No space left"):
        append(dataset, new_inputs, BuildOptions(workers=1, **QUIET))
    monkeypatch.undo()
    moved = sorted(p.name for p in (dataset / "shards").iterdir())
    assert moved == sorted(p.name for p in (clean / "shards").iterdir())  # every shard moved
    assert not (dataset / "versions/000002").exists()
    assert not (dataset / "append.lock").exists()  # released: the process is alive
    append(dataset, new_inputs, BuildOptions(workers=1, resume=True, **QUIET))
    assert tree_bytes(dataset) == tree_bytes(clean)
