"""benchmarks/README.md's table cannot go stale: every script under benchmarks/ (a module with a
`__main__`) is a row of it, every file it names exists, and every page and raw JSON under
benchmarks/ is named there. Helpers that are only imported have no `__main__`."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
_NAMED = re.compile(r"`([\w/.-]+\.(?:py|md|json))`")
_MAIN = 'if __name__ == "__main__":'


def _table() -> list[list[str]]:
    """The rows of the README's script table, as lists of cells."""
    rows = []
    for line in (BENCHMARKS / "README.md").read_text().splitlines():
        if line.startswith("| `") and line.count("|") >= 6:  # five columns: six bars
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _files(suffixes: tuple[str, ...]) -> list[str]:
    """Paths under benchmarks/ (relative to it) with one of `suffixes`; stubs/ left out."""
    return sorted(
        str(p.relative_to(BENCHMARKS))
        for p in BENCHMARKS.rglob("*")
        if p.suffix in suffixes and "stubs" not in p.parts and p.name != "README.md"
    )


def test_every_script_is_a_row() -> None:
    scripts = {row[0].strip("`") for row in _table()}
    runnable = [f for f in _files((".py",)) if _MAIN in (BENCHMARKS / f).read_text()]
    assert runnable, "found no scripts under benchmarks/"
    missing = [f for f in runnable if f not in scripts]
    assert not missing, f"benchmarks/README.md's table lacks these scripts: {missing}"


def test_every_named_file_exists() -> None:
    named = {name for row in _table() for cell in row for name in _NAMED.findall(cell)}
    gone = sorted(name for name in named if not (BENCHMARKS / name).is_file())
    assert not gone, f"benchmarks/README.md's table names files that do not exist: {gone}"


def test_every_row_script_is_runnable() -> None:
    for row in _table():
        script = row[0].strip("`")
        assert _MAIN in (BENCHMARKS / script).read_text(), f"{script} has no __main__"


def test_every_page_and_raw_json_is_named() -> None:
    named = {name for row in _table() for cell in row[3:] for name in _NAMED.findall(cell)}
    orphans = [f for f in _files((".md", ".json")) if f not in named]
    assert not orphans, f"benchmarks/README.md's table names no script writing {orphans}"


def test_one_package_per_subject() -> None:
    for folder in BENCHMARKS.iterdir():
        if folder.is_dir() and folder.name not in {"__pycache__"}:
            assert (folder / "__init__.py").is_file(), f"{folder} is not a package"
