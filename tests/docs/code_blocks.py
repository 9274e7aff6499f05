"""The fenced code blocks of the README and the guide, and what each one asks of the tests.

A block fenced as `python` or `bash` runs, in page order, in one scratch directory per page
(`tests/docs/_run_page.py`). A comment on the line just before the fence changes that:

- `<!-- not run: needs a GPU -->`, `<!-- not run: needs a cluster -->`: shown, not run;
- `<!-- not run: .ci/run runs it -->`: the test command itself, which `.ci/run` must contain;
- `<!-- file: NAME -->`: the block's text is written to NAME in the scratch directory (a schema,
  a list file) for the blocks after it to use, whatever its language.

A block fenced as `text` is output, a synopsis or a diagram: not code. Any other fence must carry
one of the comments above.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from benchmarks.figures.history import ROOT

RUN_LANGUAGES = ("python", "bash")
NOT_CODE = ("text",)
NOT_RUN_REASONS = ("needs a GPU", "needs a cluster", ".ci/run runs it")

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<kind>not run|file):\s*(?P<value>.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    not_run: str | None = None
    file: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and self.not_run is None and self.file is None


def blocks(page: Path) -> list[Block]:
    """Every fenced block of `page`, with the directive on the line before it."""
    lines = page.read_text("utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if not lines[j][:indent].strip() else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{i + 1}: a code fence that is never closed")
        directive = _DIRECTIVE.match(lines[i - 1]) if i > 0 else None
        kind = directive["kind"] if directive else None
        value = directive["value"] if directive else None
        found.append(
            Block(
                page=page,
                line=i + 1,
                language=opening["info"].strip().split(" ")[0].lower(),
                text="\n".join(body) + "\n",
                not_run=value if kind == "not run" else None,
                file=value if kind == "file" else None,
            )
        )
        i = j + 1
    return found


def problem(block: Block) -> str | None:
    """Why `block` breaks the rules above, or None."""
    if block.not_run is not None and block.not_run not in NOT_RUN_REASONS:
        return f"{block.where}: 'not run: {block.not_run}' is not one of {NOT_RUN_REASONS}"
    if block.not_run is not None and block.language not in RUN_LANGUAGES:
        return f"{block.where}: 'not run' marks a {block.language!r} block, which never runs"
    if block.file is not None or block.language in RUN_LANGUAGES + NOT_CODE:
        return None
    return (
        f"{block.where}: a {block.language or 'plain'!r} block: fence it as python or bash (it "
        "runs), as text (not code), or write it to a file with <!-- file: NAME -->"
    )
