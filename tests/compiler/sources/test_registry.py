"""The walk of a new source format: a toy format, defined and registered here, is detected by its
suffix, offered by `--format`, accepted by `BuildOptions` and built through `build()` and the
command line, with no other change; and every place that names kinds reads the one registry."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastpack.compiler import BuildOptions, SourceError, build
from fastpack.compiler.sources import (
    SOURCES,
    PlanRow,
    Source,
    SourceOptions,
    SourceScan,
    detect_kind,
    register_source,
    source_formats,
)

from fastpack.cli import build_parser, main
from tests.cli.conftest import write_image_folder

BUILT_IN = ("folder", "list", "wds", "coco", "parquet", "tfrecord")


class ToySource:
    """A `.toy` file: one `<class> <image path relative to the file>` per line."""

    kind = "toy"
    description = "a .toy file naming the class and the path of one image a line"
    suffixes = (".toy",)
    directory_files: str | None = None
    file_only = True
    shard_urls = False
    member_images = False

    def names_file(self, name: str) -> bool:
        return False

    def open(
        self,
        source: str,
        work_dir: Path | None,
        options: SourceOptions | None,
    ) -> SourceScan:
        root = Path(source).parent
        lines = [line.split(" ", 1) for line in Path(source).read_text().splitlines()]
        classes = tuple(sorted({name for name, _ in lines}))

        def rows() -> Iterator[PlanRow]:
            for name, path in lines:
                yield PlanRow(os.fsencode(path), classes.index(name), (root / path).stat().st_size)

        return SourceScan(kind=self.kind, root=root, rows=rows(), classes=classes)


@pytest.fixture
def toy() -> Iterator[Source]:
    """The toy format, registered for one test."""
    source: Source = ToySource()  # mypy checks that it is a Source
    register_source(source)
    try:
        yield source
    finally:
        del SOURCES[source.kind]


def _format_choices() -> tuple[str, ...]:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    build_command = commands.choices["build"]
    action = next(a for a in build_command._actions if a.dest == "source_format")
    assert action.choices is not None
    return tuple(action.choices)


def _build_help(capsys: pytest.CaptureFixture[str]) -> str:
    """`fastpack build --help`, without its white space (it is wrapped at any width)."""
    capsys.readouterr()
    assert main(["build", "--help"]) == 0
    return "".join(capsys.readouterr().out.split())


def _described(source: Source) -> str:
    return "".join(f"{source.kind}: {source.description}".split())


def _toy_list(tmp_path: Path) -> tuple[Path, Path]:
    """(an ImageFolder, a `.toy` file listing its images in the folder's walk order)."""
    folder = write_image_folder(tmp_path / "images")
    lines = [
        f"{c.name} {p.relative_to(folder)}"
        for c in sorted(folder.iterdir())
        for p in sorted(c.iterdir())
    ]
    toy_file = folder / "train.toy"
    toy_file.write_text("\n".join(lines) + "\n")
    return folder, toy_file


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_every_reader_of_kinds_lists_the_registry() -> None:
    assert tuple(SOURCES) == BUILT_IN
    assert source_formats() == ("auto", *BUILT_IN)
    assert _format_choices() == source_formats()
    with pytest.raises(
        SourceError, match=r"expected one of auto, folder, list, wds, coco, parquet, tfrecord$"
    ):
        BuildOptions(source_format="toy")


def test_the_build_help_describes_every_registered_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _build_help(capsys)
    for source in SOURCES.values():
        assert _described(source) in text, source.kind
    assert "toy" not in text


def test_a_kind_is_registered_once() -> None:
    with pytest.raises(SourceError, match="source kind 'folder' is already taken"):
        register_source(SOURCES["folder"])
    auto = ToySource()
    auto.kind = "auto"
    with pytest.raises(SourceError, match="source kind 'auto' is already taken"):
        register_source(auto)


def test_a_registered_source_is_offered_everywhere(
    toy: Source, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert source_formats()[-1] == "toy"
    assert _format_choices()[-1] == "toy"
    assert _described(toy) in _build_help(capsys)
    assert BuildOptions(source_format="toy").source_format == "toy"
    _, toy_file = _toy_list(tmp_path)
    assert detect_kind(toy_file, "auto") == "toy"
    with pytest.raises(SourceError, match=r"a toy source must be a file, found a directory"):
        detect_kind(tmp_path, "toy")


def test_a_registered_source_builds_as_the_folder_it_lists(toy: Source, tmp_path: Path) -> None:
    """Through `build()` (detected by its suffix) and the command line (given by `--format`),
    the toy list of an ImageFolder's images builds the dataset the folder builds."""
    folder, toy_file = _toy_list(tmp_path)
    options = BuildOptions(workers=1, progress=False)
    build(folder, tmp_path / "from-folder", options)
    summary = build(toy_file, tmp_path / "from-toy", options)
    assert summary.samples == len(toy_file.read_text().splitlines())
    argv = ["build", str(toy_file), str(tmp_path / "from-cli"), "--format", toy.kind]
    assert main([*argv, "--workers", "1", "--no-progress"]) == 0
    # byte for byte the folder's dataset, but for the kind its manifest names (and so the
    # manifest's own digest)
    expected = _files(tmp_path / "from-folder")
    manifest = _without_digest(expected["fastpack.json"]).replace(
        b'"source_kind": "folder"', b'"source_kind": "toy"'
    )
    assert manifest != _without_digest(expected["fastpack.json"])
    expected["fastpack.json"] = manifest
    for built in ("from-toy", "from-cli"):
        files = _files(tmp_path / built)
        files["fastpack.json"] = _without_digest(files["fastpack.json"])
        assert files == expected


def _without_digest(manifest: bytes) -> bytes:
    """The manifest's text less its line of its own SHA-256 (which must be there)."""
    text, found = re.subn(rb'\n  "sha256": "[0-9a-f]{64}",', b"", manifest)
    assert found == 1
    return text


def test_the_cli_reads_the_registry_only_when_asked() -> None:
    """Making the parser (every command does) leaves the compiler unimported; checking a
    `--format` reads the registry."""
    code = (
        "import sys\n"
        "from fastpack.cli import build_parser\n"
        "parser = build_parser()\n"
        "print('fastpack.compiler' in sys.modules)\n"
        "parser.parse_args(['build', 'a', 'b', '--format', 'parquet'])\n"
        "print('fastpack.compiler.sources.registry' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "True"]
