"""The pages that hold figures, and each one as its figures' JSON renders it."""

from __future__ import annotations

from pathlib import Path

from benchmarks.figures import markers
from benchmarks.figures.history import ROOT
from benchmarks.figures.registry import FIGURES


class UnknownFigureError(KeyError):
    """A page names a figure that the registry does not have."""


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def rendered(page: Path) -> str:
    """`page` with every figure block rendered from its JSON."""

    def render(name: str) -> str:
        if name not in FIGURES:
            shown = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
            raise UnknownFigureError(f"{shown} names figure {name!r}, which is not in the registry")
        return FIGURES[name].render(page.parent)

    return markers.fill(page.read_text("utf-8"), render)


def used() -> dict[str, list[Path]]:
    """Figure name -> the pages that hold it."""
    found: dict[str, list[Path]] = {}
    for page in pages():
        for name in markers.names(page.read_text("utf-8")):
            found.setdefault(name, []).append(page)
    return found
