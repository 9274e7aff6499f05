"""The optional C extensions over the system's libjpeg-turbo (package libjpeg62-turbo-dev on
Debian and Ubuntu, libjpeg-turbo-devel on Fedora): the reader's crop decoder and the compiler's
lossless progressive-to-baseline transcoder (`fastpack build --baseline`). Both need
libjpeg-turbo 2.1.3 or later (earlier releases crash in the crop, skip and fast-upsampling paths
they use; the sources refuse to compile against them). Where they do not build (no compiler, no
headers, an older libjpeg-turbo) the install goes on without them: fastpack decodes with
simplejpeg and `--baseline` is refused. What the two do alike (the version check, libjpeg's
errors, the memory and scan limits) is csrc/jpeg_limits.h, which both include; `depends` also
ships it in the source distribution.

The packages are found here: every folder with an `__init__.py` under a folder of pyproject.toml's
`package-dir` (compiler/ installs as fastpack.compiler, compiler/images/ as
fastpack.compiler.images), so that a new folder needs no line anywhere. Everything else is
configured in pyproject.toml."""

from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.config.pyprojecttoml import read_configuration

ROOT = Path(__file__).resolve().parent


def package_dir() -> dict[str, str]:
    """pyproject.toml's `package-dir`: package -> the folder it installs from."""
    config = read_configuration(ROOT / "pyproject.toml", expand=False)
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return mapping


def packages() -> list[str]:
    """Each `package-dir` package and the packages found below its folder, by their names."""
    found = []
    for package, folder in package_dir().items():
        below = find_packages(str(ROOT / folder))
        found += [package, *(f"{package}.{name}" for name in below)]
    return sorted(found)


def extension(name: str, source: str) -> Extension:
    """One of the two extensions: its one source file, the shared header, libjpeg."""
    return Extension(
        name,
        sources=[source],
        include_dirs=["csrc"],
        depends=["csrc/jpeg_limits.h"],
        libraries=["jpeg"],
        extra_compile_args=["-O2", "-std=c99"],
        optional=True,
    )


if __name__ == "__main__":  # as setuptools runs it; tests import `packages`
    setup(
        packages=packages(),
        ext_modules=[
            extension("fastpack.reader.image._jpeg_crop", "reader/image/_jpeg_crop.c"),
            extension(
                "fastpack.compiler.images._jpeg_baseline", "compiler/images/_jpeg_baseline.c"
            ),
        ],
    )
