"""Every waiver of a lint rule says why, in words from a small fixed set.

A waiver is written `# noqa: CODE[, CODE] -- reason` or `# noqa: CODE -- reason: detail`, where
`reason` is a key of `REASONS` that may waive every code named, and the detail (a package, a
library, a few words) is free. A bare `# noqa`, an unknown reason, a reason that does not fit one
of its codes, or a missing detail where the reason needs one fails the test, naming the file and
line. Ruff reads the codes and ignores the rest of the comment.

There is no reason for an import circle: modules of a part import each other without one
(tests/test_layering.py). A parameter list that two functions share becomes an options object
instead of two waivers (`fastpack.storage.Transfer`).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = (
    "benchmarks",
    "compiler",
    "examples",
    "fastpack",
    "formats",
    "reader",
    "storage",
    "tests",
)
SKIPPED = {"__pycache__", "build"}
SCRIPTS = (".ci",)  # shell scripts with Python in them: their comments are read line by line


@dataclass(frozen=True)
class Reason:
    codes: frozenset[str]  # the rules it may waive
    meaning: str
    detail: bool = False  # whether a detail must follow (`optional: torch`)


REASONS = {
    "optional": Reason(
        frozenset({"PLC0415"}),
        "an optional dependency (the detail names it), imported where it is used, so that the "
        "module imports without it",
        detail=True,
    ),
    "on use": Reason(
        frozenset({"PLC0415"}),
        "loaded only by the code that uses it, so that start-up stays fast (`import fastpack`, "
        "`fastpack --help`) and other runs stay free of it (another step or mode of a "
        "benchmark, a parent process, a worker that never needs it)",
    ),
    "checkout": Reason(
        frozenset({"PLC0415"}),
        "a module of the repository (`tests/`, `benchmarks/`) that only a checkout has, imported "
        "by a script run from its root",
    ),
    "under test": Reason(
        frozenset({"PLC0415"}),
        "the import is part of what the test checks (a module patched or looked at as a whole)",
    ),
    "side effect": Reason(
        frozenset({"F401", "PLC0415"}),
        "imported for what importing does (a library loaded before a clock starts, a worker "
        "warmed up, the C extension a script checks)",
    ),
    "after setup": Reason(
        frozenset({"E402"}),
        "imported after the lines above set up where it is found",
    ),
    "public signature": Reason(
        frozenset({"PLR0913"}),
        "what users call: its keyword options, each with its default, are the documented API",
    ),
    "mirrors": Reason(
        frozenset({"PLR0913"}),
        "follows the signature of another library (the detail names it), on purpose",
        detail=True,
    ),
    "keyword inputs": Reason(
        frozenset({"PLR0913"}),
        "internal, keyword-only: each argument is an input of its own, not a list that another "
        "function takes too (that becomes an options object)",
    ),
    "per process": Reason(frozenset({"PLW0603"}), "state of one process, set once"),
    "from a table": Reason(
        frozenset({"PLE0604"}),
        "`__all__` built from the one table that lists each name, which ruff cannot read as "
        "strings",
    ),
    "left open": Reason(
        frozenset({"SIM115"}),
        "a file left open on purpose: closing it would write what the test must not have",
    ),
}

_NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)$", re.IGNORECASE)
_WAIVER = re.compile(
    r"^:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)"
    r"\s+--\s+(?P<reason>[a-z][a-z ]*?)(?::\s*(?P<detail>\S.*?))?\s*$"
)


@dataclass(frozen=True)
class Waiver:
    where: str  # `path:line`
    comment: str


def comments(path: Path) -> Iterator[tuple[int, str]]:
    """`(line, text)` of each comment of `path`: Python's tokens for a `.py` file (a `# noqa` in
    a string is not a waiver), every `#` to the end of a line for a script."""
    text = path.read_text("utf-8")
    if path.suffix != ".py":
        for number, line in enumerate(text.splitlines(), start=1):
            if "#" in line:
                yield number, line[line.index("#") :]
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def files() -> Iterator[Path]:
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not SKIPPED & set(path.relative_to(ROOT).parts):
                yield path
    yield from sorted(ROOT.glob("*.py"))
    for folder in SCRIPTS:
        yield from sorted(p for p in (ROOT / folder).iterdir() if p.is_file())


def waivers() -> Iterator[Waiver]:
    for path in files():
        for number, comment in comments(path):
            if _NOQA.search(comment):
                yield Waiver(f"{path.relative_to(ROOT)}:{number}", comment)


def problem(comment: str) -> str | None:
    """What is wrong with the waiver in `comment`, None if nothing (or if it is no waiver)."""
    found = _NOQA.search(comment)
    if found is None:
        return None
    parsed = _WAIVER.match(found["rest"])
    if parsed is not None:
        return misfit(parsed)
    if not found["rest"].startswith(":"):
        return "a bare noqa: name the codes it waives"
    return "no reason: write `# noqa: CODE -- reason` with a reason of REASONS"


def misfit(parsed: re.Match[str]) -> str | None:
    """What is wrong with the reason of a waiver written in the syntax, None if nothing."""
    codes = [c.strip() for c in parsed["codes"].split(",")]
    name = parsed["reason"]
    reason = REASONS.get(name)
    if reason is None:
        return f"unknown reason {name!r}; the reasons are {sorted(REASONS)}"
    if unfit := [c for c in codes if c not in reason.codes]:
        return f"{name!r} does not waive {unfit}; it waives {sorted(reason.codes)}"
    if reason.detail and not parsed["detail"]:
        return f"{name!r} needs a detail: `-- {name}: what`"
    return None


def test_every_waiver_gives_a_reason_of_the_set() -> None:
    found = list(waivers())
    assert len(found) >= 50  # the walk reaches the code
    bad = [f"{w.where}: {p} ({w.comment})" for w in found if (p := problem(w.comment))]
    assert bad == [], "\n".join(bad)


def test_the_walk_reads_the_ci_scripts_and_skips_strings(tmp_path: Path) -> None:
    script = tmp_path / "run"
    script.write_text("python - <<'EOF'\nimport x  # noqa: F401\nEOF\n")
    assert list(comments(script)) == [(2, "# noqa: F401")]
    source = tmp_path / "a.py"
    source.write_text('TEXT = "# noqa"\nimport x  # noqa: F401 -- side effect\n')
    assert list(comments(source)) == [(2, "# noqa: F401 -- side effect")]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: PLC0415 -- optional: torch",
        "# noqa: PLC0415 -- on use",
        "# noqa: PLC0415 -- on use: keeps `fastpack --help` fast",
        "# noqa: F401, PLC0415 -- side effect: DALI loaded before the clock starts",
        "# noqa: PLR0913 -- mirrors: torchvision",
        "# noqa: PLR0913 -- keyword inputs",
        "# a comment that is no waiver",
    ],
)
def test_a_waiver_with_a_reason_passes(comment: str) -> None:
    assert problem(comment) is None


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("# noqa", "a bare noqa"),
        ("# noqa: PLC0415", "no reason"),
        ("# noqa: PLC0415 (torch is optional)", "no reason"),
        ("# noqa: PLC0415 - optional dependency", "no reason"),
        ("# noqa: PLC0415 -- import cycle", "unknown reason 'import cycle'"),
        ("# noqa: PLR0913 -- on use", "'on use' does not waive ['PLR0913']"),
        ("# noqa: F401, PLC0415 -- on use", "'on use' does not waive ['F401']"),
        ("# noqa: PLC0415 -- optional", "'optional' needs a detail"),
        ("# noqa: PLR0913 -- mirrors:", "no reason"),
    ],
)
def test_a_waiver_without_a_reason_of_the_set_fails(comment: str, expected: str) -> None:
    found = problem(comment)
    assert found is not None
    assert found.startswith(expected), found


def test_each_reason_waives_a_rule_and_says_what_it_means() -> None:
    for name, reason in REASONS.items():
        assert reason.codes, name
        assert len(reason.meaning) > 20, name
