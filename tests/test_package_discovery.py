"""Adding a package folder needs no line in pyproject.toml: setup.py finds every folder with an
`__init__.py` under the folders of `package-dir`. These checks are cheap; tests/test_packaging.py
builds the wheel and checks every file is in it."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# setup.py's functions; run under another name than __main__, it does not call setup()
SETUP: dict[str, Any] = runpy.run_path(str(ROOT / "setup.py"), run_name="setup")


def package_dir() -> dict[str, str]:
    mapping: dict[str, str] = SETUP["package_dir"]()
    return mapping


def folders_with_python(folder: Path) -> list[Path]:
    """`folder` and every folder below it that holds a .py file (`__pycache__` aside)."""
    found = {folder}
    for path in folder.rglob("*.py"):
        if "__pycache__" not in path.parts:
            found.add(path.parent)
    return sorted(found)


def test_the_source_folders_install_under_fastpack() -> None:
    assert package_dir() == {
        "fastpack": "fastpack",
        "fastpack.compiler": "compiler",
        "fastpack.reader": "reader",
        "fastpack.formats": "formats",
        "fastpack.storage": "storage",
    }
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    assert "\npackages = " not in pyproject, "setup.py finds the packages"


def test_every_folder_of_modules_is_a_package() -> None:
    """A folder of modules without an `__init__.py` would be left out of the wheel."""
    missing = [
        str(folder.relative_to(ROOT))
        for source in package_dir().values()
        for folder in folders_with_python(ROOT / source)
        if not (folder / "__init__.py").is_file()
    ]
    assert missing == []


def test_setup_finds_every_package_folder() -> None:
    expected = {
        ".".join([package, *folder.relative_to(ROOT / source).parts])
        for package, source in package_dir().items()
        for folder in folders_with_python(ROOT / source)
    }
    assert {"fastpack.cli", "fastpack.compiler.sources.wds", "fastpack.formats.field_types"} <= (
        expected
    )
    assert set(SETUP["packages"]()) == expected
