"""Every figure on the README and the guide is what its committed JSON renders, from a clean
tree, at a commit in this history and not stale (benchmarks/figures)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.figures import markers
from benchmarks.figures.history import ROOT, commits_between, is_ancestor
from benchmarks.figures.pages import UnknownFigureError, pages, rendered, used
from benchmarks.figures.picture import digest, draw, embedded_digest, shows
from benchmarks.figures.provenance import load_json, provenance
from benchmarks.figures.registry import FIGURES, PICTURES, picture_data

# A CPU figure may trail HEAD by this many commits that change the code it measures; then it is
# measured again (`python -m benchmarks.figures --status` tells each one's age).
MAX_AGE_COMMITS = 20
README_MAX_LINES = 300
# A measured figure in prose: a rate, a time, a ratio or a PSNR, outside figure blocks and code.
_MEASURED = re.compile(
    r"\b\d[\d,]*(\.\d+)?\s?(images?/s|img/s|samples/s|ms\b|us\b|µs\b|MB/s|MiB/s|GB/s|dB\b)"
    r"|\b\d+\.\d+x\b|\b\d+(\.\d+)?x (faster|slower|less|more|the)\b"
)
_IGNORED = re.compile(
    r"<!-- figure: .*?<!-- /figure: [a-z0-9-]+ -->|```.*?```|`[^`\n]*`", re.DOTALL
)


def _sources() -> list[tuple[str, str]]:
    return sorted({(name, s) for name in used() for s in FIGURES[name].sources})


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_is_what_its_json_renders(page: Path) -> None:
    assert page.read_text("utf-8") == rendered(page), (
        f"{page.relative_to(ROOT)}: a figure differs from its JSON; run `python -m "
        "benchmarks.figures` (it shows the difference with --check)"
    )


def test_the_readme_holds_the_headline_and_the_picture() -> None:
    on_readme = markers.names((ROOT / "README.md").read_text("utf-8"))
    assert {"readers-headline", "loaders-picture"} <= set(on_readme)


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text("utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_picture_shows_what_its_json_holds(name: str) -> None:
    path, data = PICTURES[name]
    assert embedded_digest(ROOT / path) == digest(data()), f"{path}: draw it again"


def test_the_picture_is_drawn_from_its_json_and_carries_its_digest(tmp_path: Path) -> None:
    data = picture_data()
    out = tmp_path / "loaders.png"
    draw(data, out, "caption")
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert shows(out, data)
    changed = {**data, "speed": [(name, ratio + 0.01) for name, ratio in data["speed"]]}
    assert not shows(out, changed)


@pytest.mark.parametrize(("name", "source"), _sources())
def test_figure_comes_from_a_clean_tree_at_a_commit_of_this_history(name: str, source: str) -> None:
    p = provenance(load_json(ROOT / source))
    assert p.known, f"{name}: {source} records no commit"
    assert p.clean, f"{name}: {source} was measured with uncommitted changes at {p.commit}"
    assert is_ancestor(p.commit), f"{name}: {source}'s commit {p.commit} is not in HEAD's history"


@pytest.mark.parametrize(("name", "source"), _sources())
def test_cpu_figure_is_fresh(name: str, source: str) -> None:
    figure = FIGURES[name]
    p = provenance(load_json(ROOT / source))
    age = commits_between(p.commit, "HEAD", figure.measures)
    if figure.gpu:
        assert "commits before" in figure.render(ROOT), f"{name}: a GPU figure must say its age"
        return
    assert age <= MAX_AGE_COMMITS, (
        f"{name}: {source} was measured at {p.commit}, {age} commits that change what it "
        f"measures ago (at most {MAX_AGE_COMMITS}): run its benchmark again on a clean tree"
    )


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_measured_figure_in_prose(page: Path) -> None:
    prose = _IGNORED.sub("", page.read_text("utf-8"))
    found = [m[0] for m in _MEASURED.finditer(prose)]
    assert not found, f"{page.relative_to(ROOT)}: figures outside a rendered block: {found}"


def test_a_changed_figure_is_found() -> None:
    text = "a\n<!-- figure: readers-headline -->\nold\n<!-- /figure: readers-headline -->\nb\n"
    filled = markers.fill(text, lambda name: f"{name} rendered\n")
    assert filled == (
        "a\n<!-- figure: readers-headline -->\nreaders-headline rendered\n"
        "<!-- /figure: readers-headline -->\nb\n"
    )
    assert markers.bodies(filled) == {"readers-headline": "readers-headline rendered\n"}


def test_an_unknown_figure_is_named(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- figure: no-such-figure -->\n<!-- /figure: no-such-figure -->\n")
    with pytest.raises(UnknownFigureError, match="no-such-figure"):
        rendered(page)


def test_a_dirty_tree_is_told_apart() -> None:
    dirty = provenance({"fastpack_commit": "abc1234 with uncommitted changes"})
    assert (dirty.commit, dirty.clean) == ("abc1234", False)
    assert not provenance({"commit": "?"}).clean
    assert provenance({"commit": "abc1234"}).clean
