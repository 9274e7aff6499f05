"""The optional crop decoder: a C extension over the system's libjpeg-turbo (package
libjpeg62-turbo-dev on Debian and Ubuntu, libjpeg-turbo-devel on Fedora). Where it does not
build (no compiler, no headers) the install goes on without it and fastpack decodes with
simplejpeg; everything else is configured in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fastpack.reader.image._jpeg_crop",
            sources=["reader/image/_jpeg_crop.c"],
            libraries=["jpeg"],
            extra_compile_args=["-O2", "-std=c99"],
            optional=True,
        )
    ]
)
