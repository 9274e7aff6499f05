"""The import rules of DESIGN.md: compiler/ and reader/ never import each other; formats/ imports
neither, nor torch, DALI, multiprocessing or the network; none of them imports the CLI layer."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = {
    "compiler": "fastpack.compiler",
    "reader": "fastpack.reader",
    "formats": "fastpack.formats",
}
# Inside the `fastpack` namespace, each part may import only these packages.
ALLOWED = {
    "compiler": ("fastpack.compiler", "fastpack.formats"),
    "reader": ("fastpack.reader", "fastpack.formats"),
    "formats": ("fastpack.formats",),
}
# Outside it, formats/ must not reach for these.
FORMATS_FORBIDDEN = (
    "torch",
    "nvidia",
    "multiprocessing",
    "concurrent",
    "socket",
    "http",
    "urllib.request",
    "compiler",
    "reader",
)


def module_name(path: Path) -> str:
    """`compiler/a/b.py` -> `fastpack.compiler.a.b`; `compiler/a/__init__.py` -> `...compiler.a`."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [PARTS[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(source: str, module: str, is_package: bool) -> Iterator[str]:
    """Absolute dotted names that `source` (the text of `module`) imports; relative ones resolved.

    `from a import b` yields `a.b`, so that a name imported from a package is checked as the
    submodule it may be.
    """
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            yield from (f"{prefix}.{alias.name}" for alias in node.names)


def violations(part: str, names: Iterator[str]) -> list[str]:
    bad = []
    for name in names:
        if name == "fastpack" or name.startswith("fastpack."):
            if not any(name == a or name.startswith(a + ".") for a in ALLOWED[part]):
                bad.append(name)
        elif part == "formats" and any(
            name == f or name.startswith(f + ".") for f in FORMATS_FORBIDDEN
        ):
            bad.append(name)
    return bad


def modules(part: str) -> list[Path]:
    return sorted(p for p in (ROOT / part).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("part", sorted(PARTS))
def test_part_imports_follow_the_layering(part: str) -> None:
    files = modules(part)
    assert ROOT / part / "__init__.py" in files
    found = {}
    for path in files:
        names = imported_names(path.read_text("utf-8"), module_name(path), path.stem == "__init__")
        if bad := violations(part, names):
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}, f"imports that break the layering: {found}"


@pytest.mark.parametrize(
    ("part", "file", "source", "bad"),
    [
        ("compiler", "compiler/jobs.py", "from ..reader import Dataset", "fastpack.reader.Dataset"),
        ("compiler", "compiler/a/__init__.py", "from ...reader import x", "fastpack.reader.x"),
        (
            "compiler",
            "compiler/jobs.py",
            "import fastpack.reader.dataset",
            "fastpack.reader.dataset",
        ),
        ("reader", "reader/__init__.py", "from .. import compiler", "fastpack.compiler"),
        ("reader", "reader/x.py", "from fastpack import build", "fastpack.build"),
        ("reader", "reader/x.py", "from fastpack.cli import main", "fastpack.cli.main"),
        ("formats", "formats/x.py", "import torch.utils.data", "torch.utils.data"),
        ("formats", "formats/x.py", "from multiprocessing import Pool", "multiprocessing.Pool"),
        ("formats", "formats/x.py", "import socket", "socket"),
        ("formats", "formats/x.py", "from nvidia.dali import fn", "nvidia.dali.fn"),
        ("formats", "formats/x.py", "from ..reader import Dataset", "fastpack.reader.Dataset"),
    ],
)
def test_checker_catches(part: str, file: str, source: str, bad: str) -> None:
    path = ROOT / file
    names = imported_names(source, module_name(path), path.stem == "__init__")
    assert violations(part, names) == [bad]


@pytest.mark.parametrize(
    ("part", "file", "source"),
    [
        ("compiler", "compiler/jobs.py", "from ..formats import Index"),
        ("compiler", "compiler/jobs.py", "from . import plan"),
        ("reader", "reader/a/b.py", "from ...formats.index import Index"),
        ("reader", "reader/x.py", "import torch"),
        ("formats", "formats/x.py", "from .errors import FormatError\nimport numpy, zlib"),
    ],
)
def test_checker_allows(part: str, file: str, source: str) -> None:
    path = ROOT / file
    assert (
        violations(part, imported_names(source, module_name(path), path.stem == "__init__")) == []
    )
