"""Every package names its public API in a sorted `__all__`, and each of those names exists."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = {
    "compiler": "fastpack.compiler",
    "reader": "fastpack.reader",
    "formats": "fastpack.formats",
    "storage": "fastpack.storage",
}


def isort_key(name: str) -> tuple[int, str]:
    """ruff's `__all__` order (RUF022): CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return 0, name
    return (1 if name[:1].isupper() else 2), name


def packages() -> list[str]:
    found = ["fastpack"]
    for folder, package in PARTS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.append(".".join([package, *rel]))
    return found


def test_every_package_folder_is_found() -> None:
    assert {"fastpack.storage", "fastpack.reader.streaming", "fastpack.compiler.sources"} <= set(
        packages()
    )


@pytest.mark.parametrize("package", packages())
def test_all_is_sorted_and_importable(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names, f"{package} exports nothing"
    assert list(names) == sorted(names, key=isort_key), f"{package}.__all__ is not sorted"
    assert len(set(names)) == len(names)
    missing = [n for n in names if not hasattr(module, n)]
    assert missing == [], f"{package}.__all__ names what it does not have"


def test_every_error_is_reachable_from_the_top_package() -> None:
    from fastpack.formats import FastpackError  # noqa: PLC0415 -- under test: what `import fastpack` gives

    import fastpack  # noqa: PLC0415 -- under test: what `import fastpack` gives

    for name in ("BuildError", "SourceError", "FetchError", "SharedMemoryError"):
        error = getattr(fastpack, name)
        assert issubclass(error, FastpackError), name
        assert name in fastpack.__all__


def formats_imports(path: Path, source: str | None = None) -> list[str]:
    """The names that `path` (or `source`, as if it were `path`) imports from the package
    `fastpack.formats` itself, in any spelling."""
    package = path.relative_to(ROOT).parent.parts
    depth = len(package) + (package[0] != "fastpack")  # compiler/x.py is in fastpack.compiler
    text = path.read_text(encoding="utf-8") if source is None else source
    names = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ImportFrom):
            continue
        absolute = node.level == 0 and node.module == "fastpack.formats"
        relative = node.level == depth and node.module == "formats"
        if absolute or relative:
            names += [alias.name for alias in node.names]
    return names


def test_formats_is_imported_for_its_contract_only() -> None:
    """Outside formats/, the package `fastpack.formats` gives its contract (its `__all__`); every
    other name is imported from its module (`fastpack.formats.index_layout`, ...)."""
    contract = set(importlib.import_module("fastpack.formats").__all__)
    outside = [
        f"{path.relative_to(ROOT)}: {name}"
        for part in ("compiler", "reader", "storage", "fastpack", "tests", "benchmarks")
        for path in sorted((ROOT / part).rglob("*.py"))
        if "__pycache__" not in path.parts
        for name in formats_imports(path)
        if name not in contract
    ]
    assert outside == [], "import these from their modules:\n" + "\n".join(outside)


@pytest.mark.parametrize(
    ("file", "source", "names"),
    [
        ("reader/a/b.py", "from ...formats import Index, table_size", ["Index", "table_size"]),
        ("compiler/x.py", "def f():\n    from ..formats import Schema", ["Schema"]),
        ("fastpack/cli/main.py", "from ..formats import FastpackError", ["FastpackError"]),
        ("reader/x.py", "from fastpack.formats import ABSENT", ["ABSENT"]),
        ("reader/x.py", "from fastpack.formats.index_layout import HEADER_SIZE", []),
        ("reader/a/b.py", "from ..formats import x", []),  # reader.formats, not fastpack's
    ],
)
def test_formats_imports_are_found(file: str, source: str, names: list[str]) -> None:
    assert formats_imports(ROOT / file, source) == names
