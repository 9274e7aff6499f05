"""`fastpack`'s own names: each lazy name listed once, in its table, which `__all__` and the
imports that type checkers read agree with, and every name resolves to its module's own."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import fastpack

INIT = Path(fastpack.__file__)


def type_checking_imports() -> dict[str, str]:
    """Name -> module of each import in the `if TYPE_CHECKING:` block of fastpack/__init__.py."""
    names: dict[str, str] = {}
    for node in ast.parse(INIT.read_text("utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                assert statement.level == 1, ast.unparse(statement)
                for alias in statement.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-export it as itself"
                    names[alias.name] = f"fastpack.{statement.module}"
    return names


def test_all_is_the_lazy_table_and_the_eager_names() -> None:
    assert fastpack.__all__ == sorted(["FastpackError", "__version__", *fastpack._LAZY])
    assert len(set(fastpack.__all__)) == len(fastpack.__all__)
    listed = [name for names in fastpack._LAZY_MODULES.values() for name in names]
    assert len(listed) == len(set(listed)), "a name is listed twice"


def test_type_checkers_read_the_same_names_from_the_same_modules() -> None:
    assert type_checking_imports() == fastpack._LAZY


def test_every_name_resolves_to_its_module_s_own() -> None:
    for name, module in fastpack._LAZY.items():
        source = importlib.import_module(module)
        assert name in source.__all__, f"{module} does not export {name}"
        assert getattr(fastpack, name) is getattr(source, name), name
    for name in fastpack.__all__:
        assert getattr(fastpack, name) is not None, name


def test_the_streaming_dataset_is_a_top_name() -> None:
    assert "StreamingDataset" in fastpack.__all__
    assert fastpack._LAZY["StreamingDataset"] == "fastpack.reader"
