"""The import rules of the layout: compiler/ and reader/ never import each other; storage/ imports
neither (only formats/, for its errors); formats/ imports none of them, nor torch, DALI,
multiprocessing or the network; none imports the CLI layer. Inside compiler/ and reader/ the
concept folders import each other without a cycle, and the torch loader does not import DALI.

No two modules of a part import each other, directly or through others (`module_graph`): every
import counts, at the top of a file, inside a function or under `if TYPE_CHECKING:`. An import of
`a.b.c` is an edge to the module `a.b.c` and to each of the packages `a.b` and `a` whose
`__init__` Python runs for it; `from a.b import c` is `a.b.c` when that is a module, else
`a.b`'s `__init__`. The packages above the importing module itself are the exception: Python has
started them before the module runs, so the edges it makes implicitly to them are not counted (they
would tie every `__init__` that re-exports a name into a circle with its children). A name the
module imports explicitly from one of them (`from .. import Schema`) does count: it reads that
`__init__` half run, which is a circle as soon as the `__init__` imports the module."""

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
    "storage": "fastpack.storage",
}
# Inside the `fastpack` namespace, each part may import only these packages.
ALLOWED = {
    "compiler": ("fastpack.compiler", "fastpack.formats", "fastpack.storage"),
    "reader": ("fastpack.reader", "fastpack.formats", "fastpack.storage"),
    "formats": ("fastpack.formats",),
    "storage": ("fastpack.storage", "fastpack.formats"),
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
    "storage",
)
# Outside it, storage/ must not reach for these.
STORAGE_FORBIDDEN = ("torch", "nvidia", "compiler", "reader")


FORBIDDEN = {"formats": FORMATS_FORBIDDEN, "storage": STORAGE_FORBIDDEN}


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
        elif part in FORBIDDEN and any(
            name == f or name.startswith(f + ".") for f in FORBIDDEN[part]
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
        ("formats", "formats/x.py", "from ..storage import Location", "fastpack.storage.Location"),
        ("storage", "storage/x.py", "from ..reader import Dataset", "fastpack.reader.Dataset"),
        (
            "storage",
            "storage/x.py",
            "from fastpack.compiler import build",
            "fastpack.compiler.build",
        ),
        ("storage", "storage/x.py", "import torch", "torch"),
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
        ("storage", "storage/x.py", "from fastpack.formats import FastpackError"),
        ("reader", "reader/a/b.py", "from fastpack.storage import Location"),
        ("compiler", "compiler/a/b.py", "from ...storage.retry import RetryPolicy"),
    ],
)
def test_checker_allows(part: str, file: str, source: str) -> None:
    path = ROOT / file
    assert (
        violations(part, imported_names(source, module_name(path), path.stem == "__init__")) == []
    )


def folder_of(module: str, part: str) -> str | None:
    """The node of `module` in `part`'s import graph: its concept folder
    (`fastpack.reader.image.decode` -> `image`), or, for a module at the part's top, that module
    itself (`fastpack.compiler.build` -> `build.py`); None for the part's `__init__` or outside
    the part. A name imported from a top module (`fastpack.compiler.build.build`) is that module.
    """
    prefix = PARTS[part] + "."
    if not module.startswith(prefix):
        return None
    first = module[len(prefix) :].split(".", maxsplit=1)[0]
    if (ROOT / part / first).is_dir():
        return first
    if (ROOT / part / f"{first}.py").is_file():
        return f"{first}.py"
    return None


def folder_graph(part: str) -> dict[str, set[str]]:
    """Node (concept folder or top module) -> the other nodes of `part` that its modules
    import."""
    graph: dict[str, set[str]] = {}
    for path in modules(part):
        module = module_name(path)
        source = folder_of(module, part)
        if source is None:
            continue
        graph.setdefault(source, set())
        for name in imported_names(path.read_text("utf-8"), module, path.stem == "__init__"):
            target = folder_of(name, part)
            if target is not None and target != source:
                graph[source].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of `graph` as a path that starts and ends at the same node, or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


@pytest.mark.parametrize("part", ["compiler", "reader"])
def test_concept_folders_import_without_a_cycle(part: str) -> None:
    graph = folder_graph(part)
    assert len(graph) >= 5, graph  # the part really is split into concept folders
    assert find_cycle(graph) == []


def test_top_modules_are_nodes_of_the_graph() -> None:
    """A module at the top of compiler/ is a node of its own: an import between it and a folder
    counts (the cycle build.py -> cluster/ -> build.py was missed when they did not)."""
    assert folder_of("fastpack.compiler.build", "compiler") == "build.py"
    assert folder_of("fastpack.compiler.build.build", "compiler") == "build.py"
    assert folder_of("fastpack.compiler.runners.local", "compiler") == "runners"
    assert folder_of("fastpack.compiler", "compiler") is None
    graph = folder_graph("compiler")
    assert "build.py" in graph
    assert "runners" in graph["build.py"]


def test_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_torch_loader_and_image_stay_apart_from_dali() -> None:
    graph = folder_graph("reader")
    assert "dali" not in graph["torch_loader"]
    assert graph["image"] == set()  # decode and transforms need nothing else of the reader


def test_only_the_dask_runner_imports_distributed() -> None:
    """Dask is an optional extra: one module imports it, and only when a build names a cluster."""
    importers = set()
    for part in sorted(PARTS):
        for path in modules(part):
            names = imported_names(path.read_text("utf-8"), module_name(path), False)
            if any(n == "distributed" or n.startswith(("distributed.", "dask")) for n in names):
                importers.add(str(path.relative_to(ROOT)))
    assert importers == {"compiler/runners/dask_runner.py"}


def test_formats_imports_no_image_library() -> None:
    """The format reads image headers from the bytes (formats/image_header.py); decoding to
    pixels, with simplejpeg or OpenCV, belongs to the compiler and the reader."""
    importers = set()
    for path in modules("formats"):
        names = imported_names(path.read_text("utf-8"), module_name(path), False)
        if any(n.split(".")[0] in ("simplejpeg", "cv2", "PIL") for n in names):
            importers.add(str(path.relative_to(ROOT)))
    assert importers == set()


def module_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the modules of `sources` it imports (the rule in this file's docstring).

    `sources` maps each module's dotted name to its text and whether it is a package `__init__`.
    """
    graph: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        own = module if is_package else module.rpartition(".")[0]
        graph[module] = set()
        for imported in imported_names(source, module, is_package):
            name = imported
            while name and name not in sources:
                name = name.rpartition(".")[0]  # `a.b.Name` -> the module `a.b`
            if not name:
                continue  # outside the part
            graph[module].add(name)
            package = name.rpartition(".")[0]
            while package:
                if package in sources and not (own == package or own.startswith(package + ".")):
                    graph[module].add(package)
                package = package.rpartition(".")[0]
        graph[module].discard(module)
    return graph


def part_sources(part: str) -> dict[str, tuple[str, bool]]:
    return {
        module_name(path): (path.read_text("utf-8"), path.stem == "__init__")
        for path in modules(part)
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of `graph` with more than one node, each sorted: the
    sets of modules that import each other, directly or through the others of the set."""
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        reach[start] = seen
    found = {
        tuple(sorted({start} | {n for n in reach[start] if start in reach.get(n, ())}))
        for start in graph
    }
    return sorted(list(c) for c in found if len(c) > 1)


@pytest.mark.parametrize("part", sorted(PARTS))
def test_modules_of_a_part_import_without_a_circle(part: str) -> None:
    sources = part_sources(part)
    graph = module_graph(sources)
    assert sum(len(targets) for targets in graph.values()) >= len(graph) // 2  # edges were found
    assert circles(graph) == [], "modules that import each other, directly or through others"


def test_module_graph_reads_a_real_part() -> None:
    graph = module_graph(part_sources("reader"))
    assert "fastpack.reader.map_style.dataset" in graph["fastpack.reader.map_style"]
    # `from ...formats import X` leaves the part: no edge.
    assert not any(n.startswith("fastpack.formats") for n in graph["fastpack.reader.map_style"])


def _planted(files: dict[str, str]) -> dict[str, tuple[str, bool]]:
    """Sources of a made-up reader/ for `module_graph`: {"p/__init__.py": "...", "p/q.py": "..."}
    (paths under reader/)."""
    sources = {"fastpack.reader": ("", True)}
    for file, source in files.items():
        path = ROOT / "reader" / file
        sources[module_name(path)] = (source, path.stem == "__init__")
    return sources


@pytest.mark.parametrize(
    ("sources", "circle"),
    [
        pytest.param(
            _planted(
                {"a.py": "from .b import B", "b.py": "def f() -> None:\n    from .a import A\n"}
            ),
            ["fastpack.reader.a", "fastpack.reader.b"],
            id="function-level import",
        ),
        pytest.param(
            _planted(
                {
                    "a.py": "from . import b",
                    "b.py": "import fastpack.reader.c",
                    "c.py": "from .a import A",
                }
            ),
            ["fastpack.reader.a", "fastpack.reader.b", "fastpack.reader.c"],
            id="through a third module",
        ),
        pytest.param(
            _planted(
                {
                    "a/__init__.py": "from .x import X",
                    "a/x.py": "from fastpack.reader.b.y import Y",
                    "b/__init__.py": "from ..a.x import X",
                    "b/y.py": "",
                }
            ),
            ["fastpack.reader.a", "fastpack.reader.a.x", "fastpack.reader.b"],
            id="through the __init__ of the imported package",
        ),
        pytest.param(
            _planted({"p/__init__.py": "from .q import Q", "p/q.py": "from . import Name"}),
            ["fastpack.reader.p", "fastpack.reader.p.q"],
            id="a name read from the module's own package",
        ),
        pytest.param(
            _planted(
                {
                    "a.py": "import typing\nif typing.TYPE_CHECKING:\n    from .b import B\n",
                    "b.py": "from .a import A",
                }
            ),
            ["fastpack.reader.a", "fastpack.reader.b"],
            id="type-checking import",
        ),
    ],
)
def test_circle_finder_catches_a_planted_circle(
    sources: dict[str, tuple[str, bool]], circle: list[str]
) -> None:
    assert circles(module_graph(sources)) == [circle]


def test_a_package_and_its_children_are_no_circle() -> None:
    """A child's import of a sibling runs its own package's `__init__` (already started): no
    edge back, so an `__init__` that re-exports its children is no circle."""
    sources = _planted(
        {
            "p/__init__.py": "from .q import Q\nfrom .r import R",
            "p/q.py": "from .r import R",
            "p/r.py": "from fastpack.reader.p.s import S",
            "p/s.py": "",
        }
    )
    graph = module_graph(sources)
    assert graph["fastpack.reader.p.q"] == {"fastpack.reader.p.r"}
    assert circles(graph) == []


def test_circles_lists_each_strongly_connected_set_once() -> None:
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c"}, "e": {"a"}}
    assert circles(graph) == [["a", "b"], ["c", "d"]]
