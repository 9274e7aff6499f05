"""Every package names its public API in a sorted `__all__`, and each of those names exists."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = {"compiler": "fastpack.compiler", "reader": "fastpack.reader",
         "formats": "fastpack.formats", "storage": "fastpack.storage"}  # fmt: skip


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
    from fastpack.formats import FastpackError  # noqa: PLC0415

    import fastpack  # noqa: PLC0415

    for name in ("BuildError", "SourceError", "FetchError", "SharedMemoryError"):
        error = getattr(fastpack, name)
        assert issubclass(error, FastpackError), name
        assert name in fastpack.__all__
