"""What git says of a figure's commit: whether HEAD has it, and how many changes came after."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class HistoryError(RuntimeError):
    """git cannot answer here (not a checkout, a shallow clone, an unknown commit)."""


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise HistoryError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout.strip()


def is_ancestor(commit: str, of: str = "HEAD") -> bool:
    if _git("rev-parse", "--is-shallow-repository") == "true":
        raise HistoryError("a shallow clone: the figures' commits need the whole history")
    _git("cat-file", "-e", f"{commit}^{{commit}}")
    done = subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "--is-ancestor", commit, of], check=False
    )
    return done.returncode == 0


def commits_between(commit: str, until: str = "HEAD", paths: tuple[str, ...] = ()) -> int:
    """Commits after `commit` up to `until` (that touch `paths`, where given)."""
    return int(_git("rev-list", "--count", f"{commit}..{until}", "--", *paths))
