"""A small ImageFolder and the dataset `fastpack build` makes of it, shared by the CLI tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from fastpack.cli import main
from tests.conftest import jpeg_bytes

CLASSES = ("cats", "dogs", "owls")
PER_CLASS = 5


def write_image_folder(root: Path) -> Path:
    for c, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True)
        for i in range(PER_CLASS):
            data = jpeg_bytes(40 + 7 * i, 56 + 5 * c, seed=100 * c + i)
            (root / name / f"{i:03d}.jpg").write_bytes(data)
    return root


@pytest.fixture(scope="package")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(source ImageFolder, dataset) built once through the command line."""
    tmp = tmp_path_factory.mktemp("cli")
    source = write_image_folder(tmp / "src")
    out = tmp / "dataset"
    code = main(["build", str(source), str(out), "--workers", "1", "--no-progress"])
    if code != 0:
        raise RuntimeError(f"fastpack build exited with {code}")
    return source, out


@pytest.fixture
def dataset_copy(built: tuple[Path, Path], tmp_path: Path) -> Path:
    """A copy of the built dataset that a test may damage."""
    return Path(shutil.copytree(built[1], tmp_path / "copy"))


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """`run("info", path)` -> (exit status, stdout, stderr)."""

    def call(*argv: str | Path) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return call
