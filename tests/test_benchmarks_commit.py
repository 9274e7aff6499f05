"""A benchmark's raw JSON says whether every tracked file was as committed, not a few folders'."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from benchmarks.figures.provenance import provenance
from benchmarks.sysinfo import fastpack_commit

ROOT = Path(__file__).resolve().parent.parent
# The one place that asks git whether the tree is clean, and the start-up benchmark, which asks
# the checkout that its fastpack is imported from (also over every tracked file).
ASKS_GIT = {"benchmarks/sysinfo.py", "benchmarks/startup/startup_bench.py"}
_PATH_FILTER = re.compile(r'"--porcelain",[^)\n]*"--"')


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_change_to_any_tracked_file_marks_the_run(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("one\n")
    (tmp_path / "notes.txt").write_text("untracked files do not count\n")
    _git(tmp_path, "add", "docs/page.md")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "page")
    clean = fastpack_commit(tmp_path)
    assert provenance({"fastpack_commit": clean}).clean, clean
    (tmp_path / "docs" / "page.md").write_text("two\n")
    dirty = fastpack_commit(tmp_path)
    assert dirty.endswith(" with uncommitted changes"), dirty
    assert not provenance({"fastpack_commit": dirty}).clean


def test_no_benchmark_asks_git_about_some_folders_only() -> None:
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        text = path.read_text("utf-8")
        assert not _PATH_FILTER.search(text), f"{name}: a clean check limited to some paths"
        if (
            "rev-parse" in text
            and name not in ASKS_GIT
            and not name.startswith("benchmarks/figures/")
        ):
            raise AssertionError(f"{name}: records its commit itself; use sysinfo.fastpack_commit")
