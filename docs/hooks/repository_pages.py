"""mkdocs hook: the guide's links to the repository's own pages work on the site as on GitHub.

A page of the guide links to `../formats/SPEC.md` or `../benchmarks/readers/RESULTS.md` by its
path in the repository, which GitHub follows. mkdocs only knows `docs/`: this hook adds the
specification and every benchmark page to the site under `repository/`, points such links there,
and turns a link to any other file outside `docs/` (raw JSON, a script) into its text and path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "repository"
PAGES = ("formats/SPEC.md", "benchmarks/**/*.md")
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)")


def _repository_pages() -> list[str]:
    found = {p.relative_to(ROOT).as_posix() for pattern in PAGES for p in ROOT.glob(pattern)}
    return sorted(found)


def on_files(files: Files, config: Any) -> Files:
    for path in _repository_pages():
        content = (ROOT / path).read_text("utf-8")
        files.append(File.generated(config, f"{PREFIX}/{path}", content=content))
    return files


def _real_source(src_uri: str, docs_dir: Path) -> Path:
    if src_uri.startswith(f"{PREFIX}/"):
        return ROOT / src_uri.removeprefix(f"{PREFIX}/")
    return docs_dir / src_uri


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    source = _real_source(page.file.src_uri, docs_dir)
    virtual_dir = Path(page.file.src_uri).parent
    included = set(_repository_pages())

    def rewrite(link: re.Match[str]) -> str:
        text, target = link["text"], link["target"]
        if "://" in target or target.startswith(("#", "mailto:")):
            return link[0]
        path, _, anchor = target.partition("#")
        real = (source.parent / path).resolve()
        if real.is_relative_to(docs_dir) and not page.file.src_uri.startswith(f"{PREFIX}/"):
            return link[0]
        if not real.is_relative_to(ROOT):
            return text
        relative = real.relative_to(ROOT).as_posix()
        if relative in included:
            new = os.path.relpath(f"{PREFIX}/{relative}", virtual_dir.as_posix() or ".")
            return f"[{text}]({new}{'#' + anchor if anchor else ''})"
        if relative.startswith("docs/"):
            new = os.path.relpath(relative.removeprefix("docs/"), virtual_dir.as_posix() or ".")
            return f"[{text}]({new}{'#' + anchor if anchor else ''})"
        return text if relative in text else f"{text} (`{relative}`)"

    return _LINK.sub(rewrite, markdown)
