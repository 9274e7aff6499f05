"""The guide builds as a site with warnings as errors, and its links work on GitHub too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.figures.history import ROOT
from benchmarks.figures.pages import pages

_LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def test_site_builds_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "repository" / "formats" / "SPEC" / "index.html").is_file()


def test_every_guide_page_is_in_the_site_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f": {page.name}" in config, f"{page.name} is not in mkdocs.yml's nav"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_in_the_repository(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.DOTALL)
    broken = []
    for link in _LINK.finditer(text):
        target = link["target"].partition("#")[0]
        if not target or "://" in link["target"] or target.startswith("mailto:"):
            continue
        if not (page.parent / target).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"
