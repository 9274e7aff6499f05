"""Every package names its public API in a sorted `__all__`, and each of those names exists."""

from __future__ import annotations

import importlib
import re
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


FORMATS_SUBMODULE = re.compile(
    r"^\s*from\s+(?:fastpack\.formats\.|\.+formats\.)\w+|^\s*import\s+fastpack\.formats\.\w+", re.M
)


def test_formats_is_imported_through_its_exports() -> None:
    """Outside formats/, code imports `fastpack.formats`, never one of its modules."""
    reaching = [
        f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
        for part in ("compiler", "reader", "storage", "fastpack")
        for path in sorted((ROOT / part).rglob("*.py"))
        for match in FORMATS_SUBMODULE.finditer(path.read_text(encoding="utf-8"))
    ]
    assert reaching == [], "import these names from fastpack.formats:\n" + "\n".join(reaching)
