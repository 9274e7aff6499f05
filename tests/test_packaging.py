"""The source distribution holds the C sources and the header they share, and the wheel built from
it every package folder, data file, entry point and (where they build) both C extensions;
`import fastpack` stays cheap; the README's test command is the one CI runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import fastpack

ROOT = Path(__file__).resolve().parent.parent
# Source folder -> the package it installs as (pyproject.toml's package-dir).
PACKAGE_DIRS = {
    "fastpack": "fastpack",
    "compiler": "fastpack/compiler",
    "reader": "fastpack/reader",
    "formats": "fastpack/formats",
    "storage": "fastpack/storage",
}
# What a checkout holds besides the packages that a build reads: csrc/ is the C extensions' shared
# header (setup.py's include_dirs).
PACKAGING_FILES = ("pyproject.toml", "setup.py", "README.md")
PACKAGING_FOLDERS = (*PACKAGE_DIRS, "csrc")
C_SOURCES = ("reader/image/_jpeg_crop.c", "compiler/images/_jpeg_baseline.c")
README_TEST_COMMAND = (
    'pip install torch==2.13.0 && pip install -e ".[torch,dali,test]" && pytest -q'
)


def source_files(suffixes: tuple[str, ...]) -> dict[str, Path]:
    """Installed path (`fastpack/compiler/x.py`) -> source file, for every file of the packages."""
    found = {}
    for folder, installed in PACKAGE_DIRS.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.name.endswith(suffixes) and "__pycache__" not in path.parts:
                found[f"{installed}/{path.relative_to(ROOT / folder).as_posix()}"] = path
    return found


def build_dists(tmp: Path, env: dict[str, str] | None = None) -> tuple[Path, Path]:
    """Build the source distribution from a copy of the project's packaging inputs, then the
    wheel from that source distribution (as pip does from an sdist), into `tmp`: their paths."""
    src = tmp / "src"
    src.mkdir(parents=True)
    for name in PACKAGING_FILES:
        shutil.copy(ROOT / name, src / name)
    for folder in PACKAGING_FOLDERS:
        shutil.copytree(
            ROOT / folder,
            src / folder,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"),
        )
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp), str(src)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (sdist,) = tmp.glob("fastpack-*.tar.gz")
    (wheel,) = tmp.glob("fastpack-*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_dists(tmp_path_factory.mktemp("dists"))


@pytest.fixture(scope="module")
def wheel(dists: tuple[Path, Path]) -> zipfile.ZipFile:
    return zipfile.ZipFile(dists[1])


def window_decoder_files(names: list[str]) -> list[str]:
    """The compiled window decoder among a wheel's files."""
    return [
        n for n in names if n.startswith("fastpack/reader/image/_jpeg_crop.") and n.endswith(".so")
    ]


def transcoder_files(names: list[str]) -> list[str]:
    """The compiled baseline transcoder among a wheel's files."""
    prefix = "fastpack/compiler/images/_jpeg_baseline."
    return [n for n in names if n.startswith(prefix) and n.endswith(".so")]


def build_tools_present() -> bool:
    return Path("/usr/include/jpeglib.h").exists() and shutil.which("cc") is not None


def quoted_includes(source: Path) -> list[str]:
    """The headers a C source includes with quotes (its own, not the system's)."""
    found = []
    for line in source.read_text("utf-8").splitlines():
        words = line.split()
        if words[:1] == ["#include"] and len(words) > 1 and words[1].startswith('"'):
            found.append(words[1].strip('"'))
    return found


def test_the_sdist_carries_the_c_sources_and_the_header_they_share(
    dists: tuple[Path, Path],
) -> None:
    with tarfile.open(dists[0]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    headers = {f"csrc/{h}" for c in C_SOURCES for h in quoted_includes(ROOT / c)}
    assert headers == {"csrc/jpeg_limits.h"}
    missing = sorted({*C_SOURCES, *headers, *PACKAGING_FILES} - names)
    assert missing == [], f"files left out of the source distribution: {missing}"


def test_the_wheel_carries_the_c_extensions_where_they_build(wheel: zipfile.ZipFile) -> None:
    """Built from the source distribution: its C sources and header are enough to compile."""
    if not build_tools_present() and os.environ.get("FASTPACK_REQUIRE_WINDOW_DECODER") != "1":
        pytest.skip("no C compiler or libjpeg-turbo headers here: the wheel is built without it")
    assert len(window_decoder_files(wheel.namelist())) == 1
    assert len(transcoder_files(wheel.namelist())) == 1


def test_without_a_compiler_the_wheel_builds_and_decodes_with_simplejpeg(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "CC": str(tmp_path / "no-such-compiler")}
    _, path = build_dists(tmp_path / "build", env)
    assert window_decoder_files(zipfile.ZipFile(path).namelist()) == []
    assert transcoder_files(zipfile.ZipFile(path).namelist()) == []
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, path],
        check=True,
        capture_output=True,
    )
    code = (
        "import numpy as np, cv2, fastpack\n"
        "from fastpack.reader.image import CenterCrop, crop_decode\n"
        f"assert fastpack.__file__.startswith({str(target)!r}), fastpack.__file__\n"
        "image = np.random.default_rng(0).integers(0, 255, (120, 90, 3), np.uint8)\n"
        "jpeg = cv2.imencode('.jpg', image)[1].tobytes()\n"
        "print(CenterCrop(64)(jpeg).shape, crop_decode.decoder())\n"
        "from fastpack.compiler import BuildOptions, BuildError\n"
        "try:\n"
        "    BuildOptions(baseline=True)\n"
        "except BuildError as e:\n"
        "    print('refused:', e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("(64, 64, 3) simplejpeg ")
    assert "window decoder not built" in result.stdout
    refusal = "refused: --baseline and --restart-markers need fastpack's JPEG transcoder"
    assert refusal in result.stdout


def package_names() -> dict[str, str]:
    """Dotted package name -> its folder, for every folder holding an `__init__.py`."""
    names = {}
    for folder, installed in PACKAGE_DIRS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            names[".".join([*installed.split("/"), *rel])] = str(init.parent.relative_to(ROOT))
    return names


def test_every_package_folder_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    packages = package_names()
    assert {"fastpack", "fastpack.compiler", "fastpack.reader", "fastpack.formats"} <= set(packages)
    missing = {
        dotted: folder
        for dotted, folder in packages.items()
        if dotted.replace(".", "/") + "/__init__.py" not in names
    }
    assert missing == {}, f"package folders left out of the wheel: {missing}"


def test_every_module_and_data_file_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    expected = source_files((".py", "py.typed", ".md"))
    assert "fastpack/formats/SPEC.md" in expected
    assert {f"{p}/py.typed" for p in PACKAGE_DIRS.values()} <= set(expected)
    missing = sorted(set(expected) - set(wheel.namelist()))
    assert missing == [], f"files left out of the wheel: {missing}"


def test_wheel_declares_the_command_and_extras(wheel: zipfile.ZipFile) -> None:
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "fastpack = fastpack.cli:main" in wheel.read(entry_points).decode()
    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    text = wheel.read(metadata).decode()
    for extra in ("torch", "dali", "test"):
        assert f"Provides-Extra: {extra}" in text


def test_import_fastpack_does_not_import_torch_or_the_parts() -> None:
    code = (
        "import sys, fastpack; "
        "print(sorted(m for m in ('torch', 'fastpack.compiler', 'fastpack.reader', 'nvidia.dali') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "[]"


def test_public_api_resolves() -> None:
    assert fastpack.__all__ == sorted(fastpack.__all__)
    for name in fastpack.__all__:
        assert getattr(fastpack, name) is not None, name
    assert issubclass(fastpack.FastpackError, Exception)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = fastpack.nope


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    assert README_TEST_COMMAND in readme
    assert f"{README_TEST_COMMAND} || exit $?" in ci.splitlines()
