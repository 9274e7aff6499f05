"""A fact is defined once: no two modules assign the same public constant the same value.

Two modules that each write `PNG_SIGNATURE = b"\\x89PNG..."` hold one fact twice, and the copies
drift. The lower module keeps it (formats/ for what is on disk) and the others import it. The
pairs below are equal by coincidence, not by meaning: each says why they stay apart.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("compiler", "reader", "formats", "storage", "fastpack")

APART: dict[str, str] = {
    "BLOCK_BYTES": "storage/copy.py copies a file to disk, reader/streaming/readahead.py warms "
    "the page cache: each block size is tuned for its own reads",
    "DEFAULT_CHUNK_BYTES": "verify_remote's ranged reads of a whole shard and Location's stream "
    "buffer are separate settings",
    "GOLDEN": "SplitMix64's increment: fastpack/view_build/draws.py keeps its own copy so that a "
    "view's samples stay what SPEC section 8 says whatever the reader's draws become",
    "STATE_VERSION": "the loader state, the streaming dataset's state and the streaming loader's "
    "state are three formats, each at its own version",
}


def _is_type_variable(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("TypeVar", "ParamSpec")
    )


def public_constants() -> dict[tuple[str, str], set[str]]:
    """(name, the value's source tree) -> the modules that assign it at their top level."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            for node in ast.parse(path.read_text("utf-8")).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    target, value = node.target, node.value
                else:
                    continue
                if not isinstance(target, ast.Name) or _is_type_variable(value):
                    continue
                if target.id.isupper() and not target.id.startswith("_"):
                    found[target.id, ast.dump(value)].add(str(path.relative_to(ROOT)))
    return found


def test_no_public_constant_is_defined_twice() -> None:
    twice = {
        name: sorted(modules)
        for (name, _), modules in public_constants().items()
        if len(modules) > 1 and name not in APART
    }
    assert twice == {}, "define each once, in the lowest module that fits, and import it"


def test_every_pair_kept_apart_still_exists() -> None:
    """Also shows that the scan finds a constant in two modules."""
    counts: dict[str, int] = defaultdict(int)
    for (name, _), modules in public_constants().items():
        counts[name] += len(modules)
    assert {name for name in APART if counts[name] < 2} == set()


def test_the_one_definitions() -> None:
    modules = {name: found for (name, _), found in public_constants().items()}
    assert modules["PNG_SIGNATURE"] == {"formats/image_header.py"}
    assert modules["JPEG_SIGNATURE"] == {"formats/image_header.py"}
    assert modules["SUPPORTED_VERSIONS"] == {"formats/layout.py"}
    assert modules["COPIES_DIR"] == {"compiler/sources/urls.py"}
